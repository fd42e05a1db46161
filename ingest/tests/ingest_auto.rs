//! `--format auto` (the default) through the runner: the envelope records of a generated
//! scenario come out exactly as with `--format envelope`, and a whole scenario directory
//! of mixed real formats is read with every record accounted for.

mod ingest_common;

use std::path::{Path, PathBuf};

use ingest_common::*;
use whyslow_ingest::Format;
use whyslow_schemas::Table;

fn scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/scenarios/seed-preemption")
}

#[test]
fn auto_reads_envelope_like_envelope() {
    let dir = tempfile::tempdir().unwrap();
    let sdk = scenario().join("sdk.jsonl.gz");
    let (a, b) = (dir.path().join("auto"), dir.path().join("envelope"));
    let sa = run(&a, &[&sdk], Format::Auto).total();
    let sb = run(&b, &[&sdk], Format::Envelope).total();
    assert_eq!(
        sb.counts.rejected, 0,
        "the fixture generator writes valid envelope"
    );
    assert!(sb.counts.records > 1000);
    assert_eq!((sa.counts, sa.written), (sb.counts, sb.written));
    for table in [Table::Events, Table::Metrics] {
        let (x, y) = (read(&a, table), read(&b, table));
        assert_eq!(x.num_rows(), y.num_rows());
        // Same rows: compare the ids/series and times the store sorted the same way.
        assert_eq!(times(&x, "time"), times(&y, "time"), "{table:?}");
    }
}

#[test]
fn a_scenario_directory_is_accounted_for() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let s = run(&store, &[&scenario()], Format::Auto);
    assert!(s.failures.is_empty(), "{:?}", s.failures);
    let t = s.total();
    assert!(t.inputs >= 8, "{}", s.render());
    assert!(
        t.written.events > 0 && t.written.metrics > 0,
        "{}",
        s.render()
    );
    // Re-ingesting the directory adds nothing.
    let again = run(&store, &[&scenario()], Format::Auto).total();
    assert_eq!(again.written.total(), 0, "{again:?}");
    assert_eq!(again.counts.records, t.counts.records);
}
