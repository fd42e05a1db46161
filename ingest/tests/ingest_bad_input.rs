//! The bad-input corpus (`fixtures/bad-input/`, plus a generated 10 MB line): every bad
//! record lands whole in `dead_letters` with `file:line` and a reason naming the problem,
//! the good records around it are written, and the summary balances. Re-ingesting the
//! same inputs adds nothing.

mod ingest_common;

use std::path::{Path, PathBuf};

use ingest_common::*;
use whyslow_ingest::Format;
use whyslow_ingest::decode::MAX_RECORD_BYTES;
use whyslow_schemas::Table;

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/bad-input")
        .join(name)
}

/// (line, a phrase the reason must contain) for every bad line of `envelope-bad.jsonl`.
const ENVELOPE_BAD: [(u64, &str); 21] = [
    (2, "malformed JSON: EOF while parsing an object"),
    (3, "malformed JSON: trailing characters"),
    (4, "expected an envelope JSON object"),
    (5, "field 'value' must be a number, got a string"),
    (6, "field 'value' must be a number, got a string \"NaN\""),
    (7, "field 'value' is out of range for a float64: 1e400"),
    (8, "field 'rank' must be an integer, got 1.5"),
    (9, "field 'step' must be an integer, got a string"),
    (10, "expected a string for field 'node'"),
    (11, "missing required field 'time'"),
    (12, "unreadable time 'yesterday'"),
    (13, "unreadable time '2026-11-29 10:15'"),
    (14, "an event needs 'kind'"),
    (15, "unknown layer 'kernel'"),
    (16, "unknown severity 'fatal'"),
    (
        17,
        "no 'layer', and kind 'my_custom_thing' does not imply one",
    ),
    (18, "expected an object for field 'attrs'"),
    (19, "duplicate field 'time'"),
    (20, "unreadable time -1"),
    (21, "malformed JSON: expected ident"),
    (25, "field 'value' must be a number, got a boolean true"),
];

/// The dead letters as (source_ref, error, payload), sorted by source_ref line.
fn dead_letters(store: &Path) -> Vec<(String, String, Vec<u8>)> {
    let d = read(store, Table::DeadLetters);
    let (refs, errors, payloads) = (
        strs(&d, "source_ref"),
        strs(&d, "error"),
        binaries(&d, "payload"),
    );
    let formats = strs(&d, "format");
    assert!(formats.iter().all(|f| f.as_deref() == Some("envelope")));
    let mut v: Vec<_> = (0..d.num_rows())
        .map(|i| {
            (
                refs[i].clone().unwrap(),
                errors[i].clone().unwrap(),
                payloads[i].clone(),
            )
        })
        .collect();
    let line = |r: &str| r.rsplit(':').next().unwrap().parse::<u64>().unwrap();
    v.sort_by_key(|(r, _, _)| (r.rsplit_once(':').unwrap().0.to_string(), line(r)));
    v
}

#[test]
fn envelope_corpus_lands_in_dead_letters_with_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let file = corpus("envelope-bad.jsonl");
    let text = std::fs::read(&file).unwrap();
    let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();

    let s = run(&store, &[&file], Format::Envelope);
    let t = s.total();
    assert_eq!(
        (
            t.counts.records,
            t.counts.produced,
            t.counts.skipped,
            t.counts.rejected
        ),
        (25, 2, 2, 21)
    );
    assert_eq!(
        (t.written.events, t.written.metrics, t.written.dead_letters),
        (1, 1, 21)
    );

    let dead = dead_letters(&store);
    assert_eq!(dead.len(), ENVELOPE_BAD.len());
    for ((source_ref, error, payload), (line, want)) in dead.iter().zip(ENVELOPE_BAD) {
        assert_eq!(source_ref, &format!("{}:{line}", file.display()));
        assert!(
            error.contains(want),
            "line {line}: reason '{error}' lacks '{want}'"
        );
        assert_eq!(
            payload.as_slice(),
            lines[line as usize - 1],
            "line {line} kept whole"
        );
    }
    assert_eq!(read(&store, Table::Events).num_rows(), 1);
    assert_eq!(read(&store, Table::Metrics).num_rows(), 1);

    // The same input again: nothing new, dead letters included.
    let again = run(&store, &[&file], Format::Envelope).total();
    assert_eq!(again.written.total(), 0, "{again:?}");
    assert_eq!(again.duplicates.total(), 23);
    assert_eq!(read(&store, Table::DeadLetters).num_rows(), 21);
}

#[test]
fn invalid_utf8_and_a_10_mb_line_are_rejected_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let utf8 = corpus("invalid-utf8.jsonl");
    let big = dir.path().join("big.jsonl");
    let mut line = br#"{"time":"2026-11-29T10:15:00Z","kind":"xid","message":""#.to_vec();
    line.resize(10 * 1024 * 1024, b'x');
    line.extend_from_slice(br#""}"#);
    let mut content = line.clone();
    content.extend_from_slice(b"\n{\"time\":\"2026-11-29T10:15:01Z\",\"kind\":\"xid\"}\n");
    std::fs::write(&big, &content).unwrap();

    let s = run(&store, &[&utf8, &big], Format::Envelope);
    let t = s.total();
    assert_eq!(
        (t.counts.records, t.counts.produced, t.counts.rejected),
        (5, 2, 3)
    );
    assert_eq!(t.written.events, 2);

    let mut dead = dead_letters(&store);
    assert_eq!(dead.len(), 3);
    // Order the big file's letter first whatever the two paths sort as (a checkout may
    // live above or below the temporary directory).
    let big_ref = format!("{}:1", big.display());
    dead.sort_by_key(|(r, _, _)| *r != big_ref);
    let raw = std::fs::read(&utf8).unwrap();
    let raw_lines: Vec<&[u8]> = raw.split(|&b| b == b'\n').collect();
    assert_eq!(dead[0].0, format!("{}:1", big.display()));
    assert!(
        dead[0].1.contains(&format!(
            "record of {} bytes is over the limit of {MAX_RECORD_BYTES} bytes",
            line.len()
        )),
        "{}",
        dead[0].1
    );
    assert_eq!(
        dead[0].2, line,
        "kept whole: it is under the 64 MiB hard cap"
    );
    assert_eq!(dead[1].0, format!("{}:1", utf8.display()));
    assert!(
        dead[1].1.contains("invalid UTF-8 at byte 59"),
        "{}",
        dead[1].1
    );
    assert_eq!(dead[1].2, raw_lines[0]);
    assert_eq!(dead[2].0, format!("{}:3", utf8.display()));
    assert!(
        dead[2].1.contains("invalid UTF-8 at byte 0"),
        "{}",
        dead[2].1
    );
}

#[test]
fn an_unreadable_input_is_named_and_the_others_are_ingested() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let good = dir.path().join("good.jsonl");
    std::fs::write(&good, "{\"time\":1795947300,\"kind\":\"xid\"}\n").unwrap();
    let missing = dir.path().join("missing.jsonl");
    let truncated_gz = dir.path().join("cut.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(
        &mut enc,
        "{\"time\":1795947301,\"kind\":\"xid\"}\n"
            .repeat(1000)
            .as_bytes(),
    )
    .unwrap();
    let gz = enc.finish().unwrap();
    std::fs::write(&truncated_gz, &gz[..gz.len() - 20]).unwrap();

    let s = run(&store, &[&missing, &truncated_gz, &good], Format::Envelope);
    assert_eq!(s.failures.len(), 2, "{:?}", s.failures);
    assert!(
        s.failures[0].starts_with(&format!("cannot read {}: ", missing.display())),
        "{}",
        s.failures[0]
    );
    assert!(
        s.failures[1].starts_with(&format!(
            "cannot read {} (after line ",
            truncated_gz.display()
        )),
        "{}",
        s.failures[1]
    );
    // The lines before the gzip stream broke off are kept (they are one row: same content).
    assert_eq!(read(&store, Table::Events).num_rows(), 2);
    assert!(s.render().contains("2 input(s) could not be read"));
}
