//! `whyslow replay` as a user runs it: the seed scenario ingested and reported, its derived
//! tables deleted (as after a rule change that drops them), replay rebuilds them and
//! names every slowdown it added; a second replay changes and writes nothing. A kernel log
//! ingested with the wrong `--format` is recovered with `--retry-format`. Bad usage exits 2,
//! a missing store 1, each with one sentence on stderr.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use whyslow_schemas::Table;
use whyslow_store::{Root, Store, StoreWriter};

fn whyslow(store: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_whyslow"));
    c.arg("--store").arg(store).env_remove("WHYSLOW_STORE");
    c
}

fn run(c: &mut Command) -> Output {
    c.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(c: &mut Command) -> String {
    let out = run(c);
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// The seed scenario's inputs (its answer key and README are not inputs).
fn seed_inputs() -> Vec<PathBuf> {
    support::scenario_inputs("seed-preemption")
}

#[test]
fn replay_rebuilds_deleted_derived_tables_and_then_has_nothing_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    replay_rebuilds(&tmp.path().join("store"), &[], tmp.path());
}

#[test]
fn replay_rebuilds_the_derived_tables_of_a_bucket_store() {
    let s3 = support::s3::S3Server::start();
    let tmp = tempfile::tempdir().unwrap();
    replay_rebuilds(Path::new(&s3.url("replayed")), &s3.env(), tmp.path());
}

/// The store at `store` (reached with `env`) opened in this process.
fn open(store: &Path, env: &[(String, String)]) -> Store {
    Store::open_root(Root::parse_with(store, env).unwrap()).unwrap()
}

/// Ingest and report the seed, delete its derived tables, replay: they come back as they
/// were, and a second replay writes nothing. `scratch` takes the report file.
fn replay_rebuilds(store: &Path, env: &[(String, String)], scratch: &Path) {
    let store = store.to_path_buf();
    let whyslow = |store: &Path| {
        let mut c = whyslow(store);
        c.envs(env.iter().map(|(k, v)| (k, v)));
        c
    };
    ok(whyslow(&store)
        .args(["ingest", "--no-progress"])
        .args(seed_inputs()));
    ok(whyslow(&store)
        .args(["report", "--persist", "-o"])
        .arg(scratch.join("report.md")));
    let slowdowns = open(&store, env).rows(Table::Slowdowns);
    let causes = open(&store, env).rows(Table::Causes);
    assert!(slowdowns > 0, "report persisted the seed's slowdowns");

    // Right after the report there is nothing to change: a report only reads, and one
    // that persists what is already there writes nothing.
    let version = open(&store, env).version();
    ok(whyslow(&store).args(["report", "--format", "json"]));
    ok(whyslow(&store).args(["report", "--persist", "--format", "json"]));
    assert_eq!(open(&store, env).version(), version);
    let selected = whyslow(&store)
        .args(["report", "--persist", "--namespace", "ml"])
        .output()
        .unwrap();
    assert_eq!(selected.status.code(), Some(2), "{selected:?}");
    let out = ok(whyslow(&store).arg("replay"));
    assert!(out.contains("unchanged, nothing written"), "{out}");
    assert_eq!(open(&store, env).version(), version);

    let mut w =
        StoreWriter::open_root(Root::parse_with(&store, env).unwrap(), Default::default()).unwrap();
    w.replace_tables(vec![(Table::Slowdowns, vec![]), (Table::Causes, vec![])])
        .unwrap();
    drop(w);
    assert_eq!(open(&store, env).rows(Table::Slowdowns), 0);

    let out = ok(whyslow(&store).arg("replay"));
    let added = out.lines().filter(|l| l.starts_with("+ slowdown ")).count();
    assert_eq!(added as u64, slowdowns, "{out}");
    assert!(
        out.contains(&format!(
            "slowdowns: {slowdowns} (was 0): {slowdowns} added, 0 removed"
        )),
        "{out}"
    );
    assert!(out.contains("slowdowns and causes rewritten"), "{out}");
    assert!(out.starts_with("dead letters: 0 retried"), "{out}");
    let after = open(&store, env);
    assert_eq!(
        (after.rows(Table::Slowdowns), after.rows(Table::Causes)),
        (slowdowns, causes)
    );

    let version = after.version();
    let out = ok(whyslow(&store).arg("replay"));
    assert!(!out.contains("slowdown "), "{out}");
    assert!(out.contains("unchanged, nothing written"), "{out}");
    assert_eq!(open(&store, env).version(), version);
}

#[test]
fn a_wrong_format_is_recovered_with_retry_format() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let kernel = fixtures().join("samples/xid-kernel-logs/gpud-dmesg-iso-xid-13-43-and-oom.log");
    let out = ok(whyslow(&store)
        .args(["ingest", "--no-progress", "--format", "envelope"])
        .arg(&kernel));
    assert!(out.contains("0 produced"), "{out}");
    let letters = Store::open(&store).unwrap().rows(Table::DeadLetters);
    assert!(letters > 0);

    let out = ok(whyslow(&store).args(["replay", "--dead-letters-only"]));
    assert!(
        out.starts_with(&format!("dead letters: {letters} retried: 0 moved")),
        "{out}"
    );
    assert!(!out.contains("slowdowns:"), "{out}");

    // A second kernel log ingested just as wrongly; only the first is retried.
    let other =
        fixtures().join("samples/xid-kernel-logs/gpud-dmesg-time-format-iso-peermem-and-xid.log");
    ok(whyslow(&store)
        .args(["ingest", "--no-progress", "--format", "envelope"])
        .arg(&other));
    let all = Store::open(&store).unwrap().rows(Table::DeadLetters);
    assert!(all > letters);

    let out = ok(whyslow(&store)
        .args([
            "replay",
            "--dead-letters-only",
            "--retry-format",
            "kmsg",
            "--source",
        ])
        .arg(&kernel));
    assert!(
        out.starts_with(&format!("dead letters: {letters} retried: ")),
        "{out}"
    );
    let events = Store::open(&store).unwrap().rows(Table::Events);
    assert!(events > 0, "{out}");
    assert!(
        out.contains(&format!("moved ({events} events, 0 metrics written")),
        "{out}"
    );
    let left = Store::open(&store).unwrap().rows(Table::DeadLetters);
    assert!(left < all && left >= all - letters, "{out}");

    // Then the rest, with auto: the second file's letters are the only ones it reads.
    let out = ok(whyslow(&store).args(["replay", "--dead-letters-only", "--retry-format", "auto"]));
    assert!(
        out.starts_with(&format!("dead letters: {left} retried: ")),
        "{out}"
    );
    assert!(
        Store::open(&store).unwrap().rows(Table::Events) > events,
        "{out}"
    );
}

#[test]
fn bad_usage_and_a_missing_store() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    std::fs::create_dir_all(&store).unwrap();
    let out = run(whyslow(&store).args(["replay", "--retry-format", "syslog"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("invalid value 'syslog'"));
    let out = run(whyslow(&store).args(["replay", "--boot-time", "yesterday"]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let out = run(whyslow(&store).args(["replay", "--derived-only", "--dead-letters-only"]));
    assert_eq!(out.status.code(), Some(2));

    let missing = tmp.path().join("nothing-here");
    let out = run(whyslow(&missing).arg("replay"));
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("no store at") && err.lines().count() == 1,
        "{err}"
    );
    assert!(!missing.exists(), "replay does not create a store");
}

/// `lines` distinct kernel Xid lines, one millisecond apart.
fn xid_log(lines: usize) -> String {
    let mut s = String::with_capacity(lines * 200);
    for i in 0..lines {
        let (sec, ms) = (i / 1000, i % 1000);
        s.push_str(&format!(
            "2024-11-15T12:{:02}:{:02},{ms:03}000+00:00 NVRM: Xid (PCI:0000:{:02x}:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer.\n",
            sec / 60 % 60,
            sec % 60,
            i % 8 + 0x19
        ));
    }
    s
}

#[test]
fn a_replay_killed_at_any_point_loses_nothing_and_a_rerun_completes() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let kernel = tmp.path().join("gpu-node-1.log");
    let n: u64 = 100_000;
    std::fs::write(&kernel, xid_log(n as usize)).unwrap();
    ok(whyslow(&store)
        .args(["ingest", "--no-progress", "--format", "envelope"])
        .arg(&kernel));
    assert_eq!(Store::open(&store).unwrap().rows(Table::DeadLetters), n);

    let replay = || {
        let mut c = whyslow(&store);
        c.args(["replay", "--dead-letters-only", "--retry-format", "kmsg"]);
        c
    };
    // Time one full replay on a copy to aim the kills inside it.
    let copy = tmp.path().join("copy");
    let status = Command::new("cp")
        .arg("-r")
        .arg(&store)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success());
    let started = std::time::Instant::now();
    let mut c = whyslow(&copy);
    let out = ok(c.args(["replay", "--dead-letters-only", "--retry-format", "kmsg"]));
    let full = started.elapsed();
    assert!(out.contains(&format!("{n} moved ({n} events")), "{out}");

    // Kills spread over the decoding and around the commit at the end.
    for percent in [20u32, 50, 80, 90, 95, 100, 110] {
        let mut child = replay()
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(full * percent / 100);
        child.kill().unwrap(); // SIGKILL, if it is still running
        child.wait().unwrap();
        // The recovered rows are committed to `events` before the letters leave
        // `dead_letters` (two Delta commits): a kill between them leaves both, which the
        // rerun puts right (the rows are duplicates by identity); never neither.
        let s = Store::open(&store).unwrap();
        let (events, letters) = (s.rows(Table::Events), s.rows(Table::DeadLetters));
        assert!(
            [(0, n), (n, n), (n, 0)].contains(&(events, letters)),
            "after a kill at {percent}% of a replay: {events} events and {letters} letters"
        );
    }
    let out = ok(&mut replay());
    let s = Store::open(&store).unwrap();
    assert_eq!(
        (s.rows(Table::Events), s.rows(Table::DeadLetters)),
        (n, 0),
        "{out}"
    );
    let version = s.version();
    let out = ok(&mut replay());
    assert!(out.starts_with("dead letters: 0 retried"), "{out}");
    assert_eq!(Store::open(&store).unwrap().version(), version);
    eprintln!("replay of {n} dead letters (debug build): {full:?}");
}
