//! Profiles as evidence, end to end: the seed scenario (Kueue preempts the fine-tuning
//! Job; its stall runs from 09:40:01 to 10:09:16) plus captures of its own — envelope
//! `profile_captured` records and an XLA profiler session in the trainer pod's CRI log —
//! ingested into a real store and reported. The stall lists exactly the captures of its
//! workload and run whose interval overlaps it, in time order, each url once; Markdown
//! and HTML show them; the verdict is still the preemption.

use std::path::Path;

use whyslow_analyzers::Selection;
use whyslow_analyzers::command::{analyze_store, ingest_dir};
use whyslow_analyzers::report::{self, Format};

const INSIDE: &str = "https://xprof.example/?run=finetune-experiment&capture=1";

/// Envelope records: inside the stall (twice: a retry of the hook), one that began
/// before the stall and ended in it, one long before it, one of another run, one of the
/// inference Deployment at the same time.
fn envelope() -> String {
    let rec = |time: &str, workload: &str, run: &str, url: &str, secs: Option<u32>| {
        let duration = secs.map_or(String::new(), |s| format!(",\"duration_seconds\":{s}"));
        format!(
            "{{\"time\":\"{time}\",\"kind\":\"profile_captured\",\"source\":\"on-incident\",\
             \"namespace\":\"llm\",\"workload\":\"{workload}\",\"run_id\":\"{run}\",\
             \"attrs\":{{\"url\":\"{url}\"{duration}}}}}\n"
        )
    };
    let ft = "finetune-gemma-l4";
    let run = "finetune-experiment";
    [
        rec("2026-11-29T09:55:00Z", ft, run, INSIDE, Some(30)),
        rec("2026-11-29T09:55:05Z", ft, run, INSIDE, Some(30)),
        rec(
            "2026-11-29T09:40:30Z",
            ft,
            run,
            "gs://traces/ft/edge.xplane.pb",
            Some(120),
        ),
        rec(
            "2026-11-29T09:20:00Z",
            ft,
            run,
            "gs://traces/ft/before.xplane.pb",
            Some(60),
        ),
        rec(
            "2026-11-29T09:56:00Z",
            ft,
            "another-run",
            "gs://traces/ft/other-run",
            None,
        ),
        rec(
            "2026-11-29T09:56:00Z",
            "tgi-gemma-deployment",
            "",
            "https://xprof.example/tgi",
            None,
        ),
    ]
    .concat()
    .replace(",\"run_id\":\"\"", "")
}

/// The XLA/TSL profiler's lines (the wording of `fixtures/samples/profiles/`) in the
/// trainer pod's CRI log, as the kubelet writes it: a 30 s capture saved at 10:00:00.
const CRI_LOG: &str = "\
2026-11-29T09:59:30.000000000Z stderr F I0000 00:00:1795946370.000000   11530 profiler_session.cc:132] Profiler session started.
2026-11-29T10:00:00.000000000Z stderr F I0000 00:00:1795946400.000000   11530 save_profile.cc:150] Collecting XSpace to repository: /tmp/ft_trace/plugins/profile/2026_11_29_10_00_00/finetune-gemma-l4-0-zh47q.xplane.pb
";

fn write_inputs(dir: &Path) {
    for (rel, bytes) in whyslow_fixtures::seed_scenario() {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    std::fs::write(dir.join("profiles.jsonl"), envelope()).unwrap();
    let pod_log = dir.join("pod-logs/var/log/pods/llm_finetune-gemma-l4-0-zh47q_4b1e/trainer");
    std::fs::create_dir_all(&pod_log).unwrap();
    std::fs::write(pod_log.join("0.log"), CRI_LOG).unwrap();
}

#[test]
fn a_slowdown_lists_the_profiles_captured_during_it() {
    let input = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    write_inputs(input.path());
    ingest_dir(input.path(), store.path()).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (r, a) = rt
        .block_on(analyze_store(store.path(), &Selection::default()))
        .unwrap();
    let stall = r
        .slowdowns
        .iter()
        .find(|s| s.workload.as_deref() == Some("finetune-gemma-l4") && s.kind == "stall")
        .expect("the fine-tuning Job's stall");
    assert_eq!(
        (stall.start.as_str(), stall.end.as_str()),
        ("2026-11-29T09:40:01Z", "2026-11-29T10:09:16Z")
    );
    assert_eq!(stall.causes[0].cause, "orchestrator.preemption");
    let got: Vec<(&str, &str)> = stall
        .profiles
        .iter()
        .map(|p| (p.time.as_str(), p.url.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("2026-11-29T09:40:30Z", "gs://traces/ft/edge.xplane.pb"),
            ("2026-11-29T09:55:00Z", INSIDE),
            (
                "2026-11-29T10:00:00Z",
                "/tmp/ft_trace/plugins/profile/2026_11_29_10_00_00/finetune-gemma-l4-0-zh47q.xplane.pb"
            ),
        ]
    );
    // Every slowdown carries the field in JSON, empty when nothing was captured.
    let json: serde_json::Value =
        serde_json::from_str(&report::render(&r, &a, Format::Json).unwrap()).unwrap();
    for s in json["slowdowns"].as_array().unwrap() {
        assert!(s["profiles"].is_array(), "{s}");
    }
    let md = report::render(&r, &a, Format::Markdown).unwrap();
    assert!(
        md.contains(&format!(
            "Profiles to open:\n\n- 2026-11-29T09:40:30Z · `gs://traces/ft/edge.xplane.pb`\n- 2026-11-29T09:55:00Z · <{INSIDE}>\n"
        )),
        "{md}"
    );
    let html = report::render(&r, &a, Format::Html).unwrap();
    assert!(
        html.contains("<a href=\"https://xprof.example/?run=finetune-experiment&amp;capture=1\">"),
        "{html}"
    );
}
