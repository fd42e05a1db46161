//! Hostile inputs through the batch runner (issue 17), each built small in the test: no
//! input panics the run, every record that fails to decode is one dead letter and the
//! rest of its file is read, decoders' costs stay bounded (hostlists, YAML nesting), and
//! the runner hands rows on by bytes as well as rows.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use arrow::array::{Array, AsArray, RecordBatch};
use whyslow_ingest::Format;
use whyslow_ingest::run::{IngestOptions, IngestSummary, RowSink, ingest_into};
use whyslow_schemas::Table;
use whyslow_store::{CommitStats, StoreError, TableCommit};

/// Keeps every batch handed to it; each commit reports the rows as written.
#[derive(Default)]
struct Collect {
    batches: Vec<(Table, RecordBatch)>,
    since_commit: Vec<(Table, u64)>,
}

impl RowSink for Collect {
    fn append(&mut self, table: Table, batch: RecordBatch) -> Result<(), StoreError> {
        self.since_commit.push((table, batch.num_rows() as u64));
        self.batches.push((table, batch));
        Ok(())
    }

    fn commit(&mut self, tag: Format) -> Result<Vec<(Format, CommitStats)>, StoreError> {
        let mut stats = CommitStats::default();
        for (table, n) in self.since_commit.drain(..) {
            stats
                .tables
                .entry(table)
                .or_insert_with(TableCommit::default)
                .written += n;
        }
        Ok(vec![(tag, stats)])
    }
}

impl Collect {
    fn rows(&self, table: Table) -> usize {
        self.batches
            .iter()
            .filter(|(t, _)| *t == table)
            .map(|(_, b)| b.num_rows())
            .sum()
    }

    /// (source_ref, format, error) of every dead letter.
    fn dead_letters(&self) -> Vec<(String, String, String)> {
        let mut v = Vec::new();
        for (t, b) in &self.batches {
            if *t != Table::DeadLetters {
                continue;
            }
            let col = |c: &str| b.column_by_name(c).unwrap().as_string::<i32>().clone();
            let (r, f, e) = (col("source_ref"), col("format"), col("error"));
            for i in 0..b.num_rows() {
                v.push((
                    r.value(i).to_string(),
                    f.value(i).to_string(),
                    e.value(i).to_string(),
                ));
            }
        }
        v
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::File::create(&p).unwrap().write_all(bytes).unwrap();
    p.display().to_string()
}

fn ingest(
    path: &str,
    format: Format,
    tune: impl FnOnce(&mut IngestOptions),
) -> (IngestSummary, Collect) {
    let mut opts = IngestOptions::new("unused", vec![path.to_string()], format);
    opts.pipeline = false;
    tune(&mut opts);
    let mut sink = Collect::default();
    let summary = ingest_into(&opts, &mut sink).unwrap();
    assert!(summary.check().is_ok(), "{}", summary.check().unwrap_err());
    (summary, sink)
}

fn envelope_line(i: usize) -> String {
    format!(
        "{{\"time\":\"2026-11-29T10:{:02}:{:02}Z\",\"layer\":\"framework\",\"source\":\"sdk\",\"metric\":\"step_time_seconds\",\"value\":1.5,\"workload\":\"w\",\"rank\":0,\"step\":{i}}}",
        (i / 60) % 60,
        i % 60
    )
}

/// A JSON-lines file whose first line is malformed used to become one dead letter of
/// 8 MB holding the whole file (0 rows from 1,000 good ones).
#[test]
fn a_malformed_first_json_line_is_one_dead_letter_and_the_rest_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("{\"time\":\"2026-11-29T10:00:00Z\",\"metric\":\"x\",\n");
    for i in 0..1000 {
        text.push_str(&envelope_line(i));
        text.push('\n');
    }
    // A malformed line amid the others goes to the same decoder.
    text.push_str("{\"time\": oops}\n");
    let path = write(dir.path(), "sdk.jsonl", text.as_bytes());
    let (s, sink) = ingest(&path, Format::Auto, |_| {});
    let t = s.total();
    assert_eq!(sink.rows(Table::Metrics), 1000);
    assert_eq!((t.counts.records, t.counts.rejected), (1002, 2));
    let dead = sink.dead_letters();
    assert_eq!(dead.len(), 2, "{dead:?}");
    assert_eq!(dead[0].0, format!("{path}:1"));
    assert_eq!(dead[0].1, "envelope");
    assert!(dead[0].2.contains("malformed JSON"), "{}", dead[0].2);
    assert_eq!(dead[1].0, format!("{path}:1002"));
    assert_eq!(dead[1].1, "envelope");
}

/// A pretty-printed document is still held and read whole.
#[test]
fn a_pretty_printed_document_is_still_one_record() {
    let dir = tempfile::tempdir().unwrap();
    let doc = "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"Event\",\n  \"metadata\": {\"name\": \"e\", \"namespace\": \"ml\", \"uid\": \"u1\"},\n  \"involvedObject\": {\"kind\": \"Pod\", \"name\": \"p-0-abcde\", \"namespace\": \"ml\"},\n  \"reason\": \"Preempted\",\n  \"message\": \"Preempted\",\n  \"type\": \"Warning\",\n  \"firstTimestamp\": \"2026-11-29T10:15:02Z\",\n  \"lastTimestamp\": \"2026-11-29T10:15:02Z\",\n  \"count\": 1\n}\n";
    let path = write(dir.path(), "event.json", doc.as_bytes());
    let (s, sink) = ingest(&path, Format::Auto, |_| {});
    assert_eq!(s.total().counts.records, 1);
    assert_eq!(sink.rows(Table::Events), 1);
    assert!(sink.dead_letters().is_empty());
}

/// An Xid line with a broken byte as a file's first line used to pass as container
/// output and be skipped; it is a kernel line, and kmsg rejects text that is not UTF-8.
#[test]
fn invalid_utf8_in_a_first_xid_line_is_dead_lettered() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes =
        b"2026-11-29T10:15:02.123456+00:00 gpu-7 kernel: NVRM: Xid (PCI:0000:8a:00): 79, pid=1, GPU \xff fell off\n"
            .to_vec();
    bytes.extend_from_slice(
        b"2026-11-29T10:15:03.123456+00:00 gpu-7 kernel: NVRM: Xid (PCI:0000:8a:00): 79, pid=1, GPU has fallen off the bus.\n",
    );
    let path = write(dir.path(), "kern.log", &bytes);
    let (s, sink) = ingest(&path, Format::Auto, |_| {});
    let dead = sink.dead_letters();
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].0, format!("{path}:1"));
    assert_eq!(dead[0].1, "kmsg");
    assert!(dead[0].2.contains("not UTF-8"), "{}", dead[0].2);
    assert_eq!(s.total().counts.records, 2);
    assert!(sink.rows(Table::Events) >= 1);
}

/// Timestamp-like lines with a multibyte character where auto-detection sliced by byte
/// offsets used to panic the run.
#[test]
fn multibyte_timestamp_like_lines_do_not_panic_auto() {
    let dir = tempfile::tempdir().unwrap();
    // Byte 16 of a syslog-like line, or bytes 7..11 of a Fabric Manager-like stamp,
    // inside a character.
    let lines = [
        "Nov 29 10:15:0€ gpu-7 kernel: x",
        "Nov 29 10:15:02é host ident: x",
        "[Feb 25 202é 13:59:4] [INFO] x",
        "[Feb 25 2€5 13:59:4] [INFO] x",
        "2026-11-29T10:15:02.1é+00:00 stdout F x",
        "Dec 1 12:00:00 😀 kernel: hello",
    ];
    let path = write(dir.path(), "odd.log", (lines.join("\n") + "\n").as_bytes());
    let (s, sink) = ingest(&path, Format::Auto, |_| {});
    assert_eq!(s.total().counts.records, lines.len() as u64);
    // Read, not contained: no decoder failed on them.
    let dead = sink.dead_letters();
    assert!(
        dead.iter().all(|d| !d.2.contains("decoder failed")),
        "{dead:?}"
    );
}

/// The runner hands rows on once their text reaches `batch_bytes`, whatever their
/// number: no batch can grow to Arrow's 2 GiB offset limit (dead letters keep payloads
/// of up to 64 MiB each).
#[test]
fn dead_letters_are_handed_on_by_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let big = format!("{{\"time\": {}\n", "x".repeat(300 * 1024));
    let path = write(dir.path(), "big.jsonl", big.repeat(20).as_bytes());
    let (s, sink) = ingest(&path, Format::Envelope, |o| o.batch_bytes = 1024 * 1024);
    assert_eq!(s.total().counts.rejected, 20);
    let dead: Vec<&RecordBatch> = sink
        .batches
        .iter()
        .filter(|(t, _)| *t == Table::DeadLetters)
        .map(|(_, b)| b)
        .collect();
    assert!(dead.len() >= 5, "{} batches", dead.len());
    for b in dead {
        let payload = b.column_by_name("payload").unwrap().as_binary::<i32>();
        let bytes: usize = (0..payload.len()).map(|i| payload.value(i).len()).sum();
        assert!(bytes < 2 * 1024 * 1024, "{bytes}");
    }
}

/// A 16 KB slurmctld line whose hostlist expanded to gigabytes is one dead letter, at
/// once.
#[test]
fn a_huge_hostlist_is_a_quick_dead_letter() {
    let dir = tempfile::tempdir().unwrap();
    let line = format!(
        "[2026-11-29T10:15:02.123] error: Nodes {}[0-65535] not responding, setting DOWN\n",
        "n".repeat(16 * 1024)
    );
    let path = write(dir.path(), "slurmctld.log", line.as_bytes());
    let started = Instant::now();
    let (s, sink) = ingest(&path, Format::Slurm, |_| {});
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(s.total().counts.rejected, 1);
    let dead = sink.dead_letters();
    assert!(dead[0].2.contains("bytes of node names"), "{}", dead[0].2);
}

/// 64K nested `[` in a YAML document took seconds to parse (200K never ended): one dead
/// letter at once, by format and in auto mode.
#[test]
fn deeply_nested_yaml_is_a_quick_dead_letter() {
    let dir = tempfile::tempdir().unwrap();
    let doc = format!("apiVersion: v1\nkind: Event\nx: {}\n", "[".repeat(200_000));
    let path = write(dir.path(), "deep.yaml", doc.as_bytes());
    for format in [Format::K8s, Format::Auto] {
        let started = Instant::now();
        let (s, sink) = ingest(&path, format, |_| {});
        assert!(started.elapsed() < Duration::from_secs(5), "{format}");
        assert_eq!(s.total().counts.rejected, 1, "{format}");
        let dead = sink.dead_letters();
        assert!(
            dead[0].2.contains("nested deeper than 128"),
            "{}",
            dead[0].2
        );
    }
}

/// Found by the `auto` fuzz target: in a file that auto reads as k8s, a line that is a
/// JSON array followed by other text (`[2]025-10-18 …`) is two records, the array's item
/// and the rest, each dead-lettered with its own bytes under the line's number; the
/// accounting balances (checked in `ingest`) and nothing is dropped.
#[test]
fn a_json_array_line_followed_by_garbage_is_two_dead_letters_of_its_line() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/hostile/auto-k8s-array-then-garbage.txt"
    );
    let (s, sink) = ingest(path, Format::Auto, |_| {});
    let t = s.total();
    let dead = sink.dead_letters();
    assert_eq!(dead.len() as u64, t.counts.rejected, "{dead:?}");
    let line_26: Vec<_> = dead
        .iter()
        .filter(|d| d.0 == format!("{path}:26"))
        .collect();
    assert_eq!(line_26.len(), 2, "{dead:?}");
    assert!(t.counts.records >= 32, "{:?}", t.counts);
}
