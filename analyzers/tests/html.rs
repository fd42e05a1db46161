//! The HTML report renders in headless Chromium: the seed scenario's page is loaded, its
//! DOM dumped after parsing, and the timeline's SVG parts (the window, the metric line,
//! the evidence marks by layer, the numbered chain) must be there; a screenshot must not
//! be blank. Skipped, with a note, when no Chromium is installed.

use std::path::Path;
use std::process::Command;

use whyslow_analyzers::Selection;
use whyslow_analyzers::command::{analyze_store, ingest_dir};
use whyslow_analyzers::report::{self, Format};

fn chromium() -> Option<&'static str> {
    [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ]
    .into_iter()
    .find(|b| {
        Command::new(b)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[test]
fn seed_report_renders_in_headless_chromium() {
    let Some(browser) = chromium() else {
        eprintln!("note: no Chromium found; the HTML rendering check is skipped");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    ingest_dir(
        &whyslow_fixtures::committed_scenarios_dir().join("seed-preemption"),
        &store,
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (r, a) = rt
        .block_on(analyze_store(&store, &Selection::default()))
        .unwrap();
    let html = report::render(&r, &a, Format::Html).unwrap();
    let page = tmp.path().join("report.html");
    std::fs::write(&page, &html).unwrap();
    let profile = tmp.path().join("profile");
    let base = |cmd: &mut Command| {
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--user-data-dir={}", profile.display()));
    };
    let mut dump = Command::new(browser);
    base(&mut dump);
    let out = dump.arg("--dump-dom").arg(url(&page)).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(dom.contains("<svg"), "no SVG in the rendered DOM");
    assert!(dom.contains("class=\"window\""), "no slowdown window");
    assert!(dom.contains("class=\"metric\""), "no metric line");
    assert!(
        dom.contains("data-layer=\"orchestrator\""),
        "no orchestrator evidence mark"
    );
    assert!(dom.contains("class=\"chain\""), "no chain numbers");
    assert!(dom.contains("orchestrator.preemption"));
    let shot = tmp.path().join("shot.png");
    let mut screenshot = Command::new(browser);
    base(&mut screenshot);
    let out = screenshot
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1100,1400")
        .arg(url(&page))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "screenshot is {} bytes",
        png.len()
    );
}

fn url(p: &Path) -> String {
    format!("file://{}", p.display())
}
