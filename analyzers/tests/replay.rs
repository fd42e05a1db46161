//! `whyslow replay` on real stores: the seed scenario ingested and reported, then its
//! derived tables made stale as an older rule/detector would have left them, and dead
//! letters an older decoder left behind (real sample lines); replay must bring the store
//! to exactly what today's ingest and analysis give, say what changed, and change nothing
//! the second time.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use whyslow_analyzers::command::{ReportRequest, analyze_store, ingest_dir, run_report};
use whyslow_analyzers::output::{causes_batch, persist, slowdowns_batch};
use whyslow_analyzers::replay::{ReplayRequest, rendered, replay};
use whyslow_analyzers::{Analysis, Selection};
use whyslow_ingest::Format;
use whyslow_ingest::run::{IngestOptions, ingest};
use whyslow_schemas::{Cause, DeadLetter, DeadLetterBuilder, Origin, Table};
use whyslow_store::{Store, StoreWriter};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn seed() -> PathBuf {
    whyslow_fixtures::committed_scenarios_dir().join("seed-preemption")
}

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/samples")
}

/// Every row of a query over the store, as sorted text.
async fn rows(store: &Path, sql: &str) -> BTreeSet<String> {
    let ctx = whyslow_queries::open_session(store).await.unwrap();
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    rendered(&batches).unwrap().into_iter().collect()
}

async fn fresh_analysis(store: &Path) -> Analysis {
    analyze_store(store, &Selection::default()).await.unwrap().1
}

/// The store's derived tables hold exactly the rows of `a`.
async fn assert_derived_equal(store: &Path, a: &Analysis) {
    let want: BTreeSet<String> = rendered(&[slowdowns_batch(a).unwrap()])
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(rows(store, "SELECT * FROM slowdowns").await, want);
    let want: BTreeSet<String> = rendered(&[causes_batch(a).unwrap()])
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(rows(store, "SELECT * FROM causes").await, want);
}

#[test]
fn stale_slowdowns_and_causes_are_rebuilt_and_the_changes_named() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    ingest_dir(&seed(), &store).unwrap();
    let rt = runtime();
    rt.block_on(async {
        // `whyslow report` persists the derived tables of the whole store.
        run_report(&ReportRequest {
            store: store.clone(),
            selection: Selection::default(),
            format: "md".parse().unwrap(),
            output: Some(tmp.path().join("report.md")),
            persist: true,
        })
        .await
        .unwrap();
        let fresh = fresh_analysis(&store).await;
        assert!(
            !fresh.findings.is_empty(),
            "the seed has a slowdown to work on"
        );
        assert_derived_equal(&store, &fresh).await;

        // Right after a report, replay has nothing to change and writes nothing.
        let version = Store::open(&store).unwrap().version();
        let s = replay(&ReplayRequest::new(&store)).await.unwrap();
        let d = s.derived.unwrap();
        assert!(d.changes.is_empty() && !d.rewritten, "{d:?}");
        assert_eq!(Store::open(&store).unwrap().version(), version);

        // What an older rule set and detector would have stored: another verdict and
        // another lost time for the first slowdown, and a slowdown today's detectors do
        // not find.
        let mut stale = fresh.clone();
        let first = stale.findings[0].slowdown_id.clone();
        let verdict = stale.findings[0].causes[0].cause;
        let other = *Cause::ALL.iter().find(|c| **c != verdict).unwrap();
        stale.findings[0].causes[0].cause = other;
        stale.findings[0].symptom.lost_seconds += 120.0;
        let mut ghost = stale.findings[0].clone();
        ghost.slowdown_id = "ghost-of-an-older-detector".into();
        stale.findings.push(ghost);
        persist(&store, &stale).unwrap();

        let s = replay(&ReplayRequest::new(&store)).await.unwrap();
        let d = s.derived.clone().unwrap();
        assert!(d.rewritten);
        assert_eq!(d.slowdowns_before, fresh.findings.len() + 1);
        assert_eq!(d.slowdowns_after, fresh.findings.len());
        assert_eq!(d.changes.len(), 2, "{d:?}");
        let c = &d.changes[0];
        assert_eq!(c.after.as_ref().unwrap().slowdown_id, first);
        assert!(c.verdict_changed() && c.lost_changed(), "{c:?}");
        assert_eq!(c.before.as_ref().unwrap().verdict(), Some(other.id()));
        assert_eq!(c.after.as_ref().unwrap().verdict(), Some(verdict.id()));
        let lost = fresh.findings[0].symptom.lost_seconds;
        assert_eq!(c.before.as_ref().unwrap().lost_seconds, lost + 120.0);
        assert_eq!(c.after.as_ref().unwrap().lost_seconds, lost);
        let g = &d.changes[1];
        assert!(g.removed());
        assert_eq!(
            g.before.as_ref().unwrap().slowdown_id,
            "ghost-of-an-older-detector"
        );
        assert_eq!(
            (
                d.added(),
                d.removed(),
                d.verdicts_changed(),
                d.lost_changed()
            ),
            (0, 1, 1, 1)
        );
        // The store now holds exactly today's analysis.
        assert_derived_equal(&store, &fresh).await;
        let text = whyslow_analyzers::replay::render(&s);
        assert!(
            text.contains("- slowdown ghost-of-an-older-detector"),
            "{text}"
        );
        assert!(
            text.contains(&format!("verdict {} -> {}", other.id(), verdict.id())),
            "{text}"
        );
        assert!(
            text.contains("0 added, 1 removed, 1 verdicts changed, 1 lost times changed"),
            "{text}"
        );

        // A second replay changes nothing and writes nothing.
        let version = Store::open(&store).unwrap().version();
        let s = replay(&ReplayRequest::new(&store)).await.unwrap();
        let d = s.derived.unwrap();
        assert!(d.changes.is_empty() && !d.rewritten, "{d:?}");
        assert_eq!(Store::open(&store).unwrap().version(), version);

        // Derived tables deleted (as before any report): rebuilt, every slowdown added.
        let mut w = StoreWriter::open(&store).unwrap();
        w.replace_tables(vec![(Table::Slowdowns, vec![]), (Table::Causes, vec![])])
            .unwrap();
        drop(w);
        let s = replay(&ReplayRequest::new(&store)).await.unwrap();
        let d = s.derived.clone().unwrap();
        assert_eq!(d.added(), fresh.findings.len());
        assert_eq!(d.changes.len(), fresh.findings.len());
        assert_derived_equal(&store, &fresh).await;
        let text = whyslow_analyzers::replay::render(&s);
        assert!(text.contains(&format!("+ slowdown {first} (")), "{text}");
    });
}

/// Lines `numbers` (1-based) of a sample file.
fn sample_lines(rel: &str, numbers: &[usize]) -> Vec<String> {
    let text = std::fs::read_to_string(samples().join(rel)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    numbers.iter().map(|&n| lines[n - 1].to_string()).collect()
}

fn ingest_as(store: &Path, path: &Path, format: Format) {
    let mut opts = IngestOptions::new(store, vec![path.display().to_string()], format);
    opts.pipeline = false;
    ingest(&opts).unwrap();
}

const RAW_EXCEPT_INGEST_TIME: [&str; 2] = [
    "SELECT * EXCLUDE (ingest_time) FROM events",
    "SELECT * EXCLUDE (ingest_time) FROM metrics",
];

#[test]
fn dead_letters_that_decode_today_move_into_events_and_metrics_once() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let oracle = tmp.path().join("oracle");
    let inputs = tmp.path().join("inputs");
    std::fs::create_dir_all(&inputs).unwrap();
    ingest_dir(&seed(), &store).unwrap();

    // The inputs an older decoder rejected, as files (real sample lines): three Xid lines
    // of a kernel log, a dcgm-exporter sample line, and two Kubernetes Event documents
    // (one of them arrived on Kafka).
    let kernel = inputs.join("gpu-node-1.log");
    let xids = sample_lines(
        "xid-kernel-logs/gpud-dmesg-time-format-iso-peermem-and-xid.log",
        &[11, 12, 13],
    );
    std::fs::write(&kernel, xids.join("\n") + "\n").unwrap();
    let scrape = inputs.join("dcgm.prom");
    let sample = sample_lines("dcgm-exporter/dcgm-exporter-L4-kops-aws.prom", &[12]);
    std::fs::write(&scrape, sample.join("\n") + "\n").unwrap();
    let core_event = samples().join("k8s-events/k8s-api-roundtrip-fixture-core.v1.Event.json");
    let events_v1 =
        samples().join("k8s-events/k8s-api-roundtrip-fixture-events.k8s.io.v1.Event.json");
    let core_doc = std::fs::read(&core_event).unwrap();
    let v1_doc = std::fs::read(&events_v1).unwrap();

    // What today's `whyslow ingest` makes of the same inputs: the oracle.
    ingest_as(&oracle, &kernel, Format::Kmsg);
    ingest_as(&oracle, &scrape, Format::Prometheus);
    ingest_as(&oracle, &core_event, Format::K8s);
    ingest_as(&oracle, &events_v1, Format::K8s);

    let seed_letters = Store::open(&store).unwrap().rows(Table::DeadLetters);
    let (kernel_path, scrape_path, core_path) = (
        kernel.display().to_string(),
        scrape.display().to_string(),
        core_event.display().to_string(),
    );
    fn at(path: &str, line: u64) -> Origin<'_> {
        Origin::File { path, line }
    }
    fn message(offset: i64) -> Origin<'static> {
        Origin::Kafka {
            topic: "k8s.events",
            partition: 0,
            offset,
        }
    }
    let kernel_ref = |n: usize| format!("{kernel_path}:{n}");
    let mut letters = DeadLetterBuilder::new(1_795_910_400_000_000_000);
    let old = "rejected by an older decoder";
    for (i, line) in xids.iter().enumerate() {
        let origin = at(&kernel_path, i as u64 + 1);
        letters.append(&DeadLetter::whole(origin, "kmsg", old, line.as_bytes()));
    }
    letters.append(&DeadLetter::whole(
        at(&scrape_path, 1),
        "prometheus",
        old,
        sample[0].as_bytes(),
    ));
    letters.append(&DeadLetter::whole(at(&core_path, 1), "k8s", old, &core_doc));
    letters.append(&DeadLetter::whole(message(42), "k8s", old, &v1_doc));
    // Still unreadable today.
    let failing = [
        (
            at(&kernel_path, 4),
            "kmsg",
            b"\xff\xfe\x00 not text".to_vec(),
        ),
        (
            message(43),
            "k8s",
            br#"{"apiVersion":"v1","kind":"Event","metadata":"#.to_vec(),
        ),
    ];
    for (origin, f, p) in &failing {
        letters.append(&DeadLetter::whole(*origin, f, old, p));
    }
    let mut w = StoreWriter::open(&store).unwrap();
    w.append(Table::DeadLetters, letters.finish()).unwrap();
    w.commit(&[]).unwrap();
    drop(w);

    let rt = runtime();
    rt.block_on(async {
        let mut before = Vec::new();
        let mut want = Vec::new();
        for sql in RAW_EXCEPT_INGEST_TIME {
            before.push(rows(&store, sql).await);
            want.push(rows(&oracle, sql).await);
        }
        let refs_before = rows(&store, "SELECT source_ref FROM dead_letters").await;
        assert!(!want[0].is_empty() && !want[1].is_empty());

        let s = replay(&ReplayRequest::new(&store)).await.unwrap();
        let d = s.dead_letters.clone().unwrap();
        assert_eq!(d.letters, seed_letters + 8);
        assert_eq!(d.moved, 6, "{d:?}");
        assert_eq!(d.still_failing, seed_letters + 2, "{d:?}");
        assert_eq!(d.events, want[0].len() as u64);
        assert_eq!(d.metrics, want[1].len() as u64);
        assert!(d.version.is_some());

        // events and metrics: what they held plus exactly what today's ingest gives.
        for (i, sql) in RAW_EXCEPT_INGEST_TIME.iter().enumerate() {
            let after = rows(&store, sql).await;
            let expected: BTreeSet<String> = before[i].union(&want[i]).cloned().collect();
            assert_eq!(after, expected, "{sql}");
        }
        // dead_letters lost exactly the six that moved.
        let refs_after = rows(&store, "SELECT source_ref FROM dead_letters").await;
        let moved: BTreeSet<String> = refs_before.difference(&refs_after).cloned().collect();
        let mut expected_moved: BTreeSet<String> = (1..=3).map(kernel_ref).collect();
        expected_moved.insert(format!("{}:1", scrape.display()));
        expected_moved.insert(format!("{}:1", core_event.display()));
        expected_moved.insert("k8s.events/0/42".into());
        let expected_moved: BTreeSet<String> = rendered_refs(expected_moved);
        assert_eq!(moved, expected_moved);
        assert_eq!(
            Store::open(&store).unwrap().rows(Table::DeadLetters),
            seed_letters + 2
        );
        let text = whyslow_analyzers::replay::render(&s);
        assert!(text.starts_with("dead letters: "), "{text}");
        assert!(text.contains(" 6 moved ("), "{text}");

        // The second replay moves nothing and writes nothing.
        let store_before = Store::open(&store).unwrap();
        let s = replay(&ReplayRequest::new(&store)).await.unwrap();
        let d = s.dead_letters.unwrap();
        assert_eq!((d.moved, d.skipped, d.reasons_updated), (0, 0, 0), "{d:?}");
        assert_eq!(d.version, None);
        assert!(!s.derived.unwrap().rewritten);
        let store_after = Store::open(&store).unwrap();
        assert_eq!(store_after.version(), store_before.version());
        for t in Table::ALL {
            assert_eq!(store_after.rows(t), store_before.rows(t), "{t}");
        }
    });
}

/// `source_ref` values as the row renderer prints them (one column, then the separator).
fn rendered_refs(refs: BTreeSet<String>) -> BTreeSet<String> {
    refs.into_iter().map(|r| format!("{r}\u{1f}")).collect()
}
