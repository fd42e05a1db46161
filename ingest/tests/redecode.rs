//! Dead letters retried on real stores: whole kernel logs ingested with the wrong
//! `--format` (every line rejected) are retried with the right one, or with `auto`, and
//! must end as exactly what a correct ingest of the same files gives — in events, and in
//! the letters left (the lines that format skips by design stay: a guessed format that
//! reads nothing proves nothing). Retrying with the recorded format changes nothing and
//! writes nothing.

// The store crate's test helpers (rows of a committed table, rows without ingest time).
#[path = "../../store/tests/store_common/mod.rs"]
mod store_common;

use std::path::{Path, PathBuf};

use store_common::{read_table, rows_without_ingest_time};
use whyslow_ingest::Format;
use whyslow_ingest::redecode::{RedecodeOptions, redecode_store};
use whyslow_ingest::run::{IngestOptions, IngestSummary, ingest};
use whyslow_schemas::Table;
use whyslow_store::Store;

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/samples/xid-kernel-logs")
        .join(name)
}

fn ingest_as(store: &Path, path: &Path, format: Format) -> IngestSummary {
    let mut opts = IngestOptions::new(store, vec![path.display().to_string()], format);
    opts.pipeline = false;
    ingest(&opts).unwrap()
}

fn sorted_rows(store: &Path, table: Table) -> Vec<String> {
    let mut r = rows_without_ingest_time(&read_table(&Store::open(store).unwrap(), table));
    r.sort();
    r
}

/// Ingests `file` as envelope (all rejected), retries as `retry`, and compares with a
/// kmsg ingest of the same file.
fn wrong_format_then_retry(file: &str, retry: Format) {
    let tmp = tempfile::tempdir().unwrap();
    let (store, oracle) = (tmp.path().join("store"), tmp.path().join("oracle"));
    let path = sample(file);
    let wrong = ingest_as(&store, &path, Format::Envelope).total().counts;
    assert_eq!(
        wrong.rejected, wrong.records,
        "envelope rejects every kernel line"
    );
    let right = ingest_as(&oracle, &path, Format::Kmsg).total().counts;
    assert!(right.events > 0);

    // Retried as envelope: still rejected for the same reasons, nothing written.
    let version = Store::open(&store).unwrap().version();
    let s = redecode_store(&store, &RedecodeOptions::default()).unwrap();
    assert_eq!((s.letters, s.still_failing), (wrong.records, wrong.records));
    assert_eq!(
        (s.moved, s.reasons_updated, s.version),
        (0, 0, None),
        "{s:?}"
    );
    assert_eq!(Store::open(&store).unwrap().version(), version);

    let opts = RedecodeOptions {
        retry_format: Some(retry),
        ..RedecodeOptions::default()
    };
    let s = redecode_store(&store, &opts).unwrap();
    assert_eq!(s.moved, right.produced, "{s:?}");
    assert_eq!(s.events, right.events);
    // Lines kmsg skips by design, or rejects, stay as they were.
    assert_eq!(s.kept(), right.skipped + right.rejected, "{s:?}");
    assert_eq!(
        sorted_rows(&store, Table::Events),
        sorted_rows(&oracle, Table::Events)
    );
    let store_now = Store::open(&store).unwrap();
    // One Delta commit each to `events` (the recovered rows, first) and `dead_letters`.
    assert_eq!(store_now.version(), version + 2, "one commit per table");
    assert_eq!(store_now.rows(Table::DeadLetters), s.kept());

    // Once more: nothing left to move, nothing written.
    let again = redecode_store(&store, &opts).unwrap();
    assert_eq!((again.moved, again.version), (0, None), "{again:?}");
    assert_eq!(Store::open(&store).unwrap().version(), version + 2);
}

#[test]
fn a_kernel_log_ingested_as_envelope_is_recovered_as_kmsg() {
    wrong_format_then_retry(
        "gpud-dmesg-time-format-iso-peermem-and-xid.log",
        Format::Kmsg,
    );
}

#[test]
fn a_kernel_log_ingested_as_envelope_is_recovered_with_auto() {
    wrong_format_then_retry(
        "gpud-dmesg-ctime-xid-119-gsp-timeout-h100.log",
        Format::Auto,
    );
}
