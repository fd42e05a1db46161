//! The shapes in which collectors ship Events and kernel lines, read by `auto` with no
//! per-topic tuning, on real samples from those projects (`fixtures/samples/collectors/`):
//! `kubectl get events -o yaml` (a YAML `List`), Fluent Bit's `kubernetes_events` input
//! (EventLists, and records without `kind`), kubernetes-event-exporter's records without
//! `kind`, Fluent Bit `kmsg` and `systemd` records and Vector `journald` events.

mod ingest_common;
mod k8s_common;

use std::path::{Path, PathBuf};

use whyslow_ingest::Format;
use whyslow_ingest::decode::auto::AutoDecoder;
use whyslow_ingest::decode::decoder_for;
use whyslow_ingest::decode::{Decoder, Hints, Origin, Output};
use whyslow_schemas::Table;

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/samples/collectors")
        .join(name)
}

fn read(name: &str) -> String {
    std::fs::read_to_string(sample(name)).unwrap()
}

/// Decodes one Kafka message with `auto`, as a topic of mixed collector output would.
fn auto_message(bytes: &[u8], hints: &Hints) -> k8s_common::Decoded {
    let mut d = AutoDecoder::new(|f| Some(decoder_for(f)));
    let mut out = Output::new(1);
    d.decode(
        bytes,
        &Origin::Kafka {
            topic: "collector",
            partition: 0,
            offset: 7,
        },
        hints,
        &mut out,
    );
    d.finish(hints, &mut out);
    assert!(out.counts.balances(), "{:?}", out.counts);
    assert_eq!(out.counts.records, 1);
    k8s_common::collect(out)
}

/// The record of a Fluent Bit `[time, {record}]` line: what its Kafka output sends as the
/// message (with the time under `@timestamp`, its default `timestamp_key`).
fn fluent_bit_record(line: &str) -> String {
    let body = line
        .trim()
        .strip_prefix('[')
        .unwrap()
        .strip_suffix(']')
        .unwrap();
    let (time, record) = body.split_once(',').unwrap();
    let record = record.trim().strip_prefix('{').unwrap();
    format!("{{\"@timestamp\":{time},{record}")
}

/// `kubectl get events -o yaml > events.yaml; whyslow ingest events.yaml`: the List is one
/// document whose every Event becomes a row.
#[test]
fn kubectl_get_events_yaml_list() {
    let store = tempfile::tempdir().unwrap();
    let path = sample("kubectl-get-events-o-yaml-List-gke-perfkitbenchmarker.yaml");
    let summary = ingest_common::run(store.path(), &[&path], Format::Auto);
    let t = summary.total();
    // Each of the List's 39 Events is a record; an Event seen several times is two rows
    // (its first and last sighting).
    assert_eq!(
        (t.counts.rejected, t.counts.records),
        (0, 39),
        "{}",
        summary.render()
    );
    let events = ingest_common::read(store.path(), Table::Events);
    assert!(events.num_rows() >= 39, "{}", summary.render());
    let reasons = ingest_common::strs(&events, "reason");
    assert!(reasons.contains(&Some("InvalidDiskCapacity".into())));
    let kinds = ingest_common::strs(&events, "kind");
    assert!(kinds.contains(&Some("scheduled".into())), "{kinds:?}");

    // An Event whose involvedObject names nothing still reads.
    let path =
        sample("kubectl-get-events-o-yaml-List-gke-LeaderElection-no-involvedObject-name.yaml");
    let store = tempfile::tempdir().unwrap();
    let summary = ingest_common::run(store.path(), &[&path], Format::Auto);
    assert_eq!(summary.total().counts.rejected, 0, "{}", summary.render());
}

/// Fluent Bit's `kubernetes_events` input reads EventLists whose items have no `kind`;
/// its records are the Events without `kind`/`apiVersion`.
#[test]
fn fluent_bit_kubernetes_events() {
    for name in [
        "fluent-bit-kubernetes_events-input-eventlist_v1_with_creationTimestamp.json",
        "fluent-bit-kubernetes_events-input-eventlist_v1_with_lastTimestamp.json",
        "fluent-bit-kubernetes_events-input-watch_v1_with_lastTimestamp.json",
    ] {
        let d = auto_message(read(name).as_bytes(), &Hints::default());
        assert_eq!(d.counts.rejected, 0, "{name}: {:?}", d.dead);
        assert!(!d.rows.is_empty(), "{name}");
        assert!(d.rows.iter().all(|r| r.reason.is_some()), "{name}");
    }
    for name in [
        "fluent-bit-kubernetes_events-output-eventlist_v1_with_creationTimestamp.out",
        "fluent-bit-kubernetes_events-output-eventlist_v1_with_lastTimestamp.out",
        "fluent-bit-kubernetes_events-output-watch_v1_with_lastTimestamp.out",
    ] {
        let text = read(name);
        let record = fluent_bit_record(text.lines().next().unwrap());
        let d = auto_message(record.as_bytes(), &Hints::default());
        assert_eq!(d.counts.rejected, 0, "{name}: {:?}", d.dead);
        assert!(!d.rows.is_empty(), "{name}: {record}");
        assert!(d.rows.iter().all(|r| r.reason.is_some()), "{name}");
    }
}

/// kubernetes-event-exporter's JSON: the Event without `kind`, with the involved object's
/// labels and a cluster name added (here as a Go test holds it).
#[test]
fn event_exporter_records() {
    let json = |name: &str| -> String {
        let text = read(name);
        let start = text.find('`').unwrap() + 1;
        let end = text.rfind('`').unwrap();
        text[start..end].trim().to_string()
    };
    let d = auto_message(
        json("bkmonitorbeat-kubeevent-test-exporter-line-FailedScheduling-series.txt").as_bytes(),
        &Hints::default(),
    );
    assert_eq!(d.counts.rejected, 0, "{:?}", d.dead);
    assert_eq!(d.rows.len(), 1);
    assert_eq!(d.rows[0].kind, "failed_scheduling");
    assert_eq!(
        d.rows[0].time_ns,
        k8s_common::ns("2023-06-05T13:59:40.912723Z")
    );
    let d = auto_message(
        json("bkmonitorbeat-kubeevent-test-exporter-line-SystemOOM.txt").as_bytes(),
        &Hints::default(),
    );
    assert_eq!(d.counts.rejected, 0, "{:?}", d.dead);
}

/// An Xid line in each kernel record shape: the field names and values are the samples'
/// (Fluent Bit kmsg and systemd, Vector journald), the message an Xid line.
#[test]
fn kernel_lines_in_collector_records() {
    const XID: &str =
        "NVRM: Xid (PCI:0000:8a:00): 79, pid=1234, name=python, GPU has fallen off the bus.";
    let hints = Hints {
        boot_time_ns: Some(k8s_common::ns("2026-11-29T00:00:00Z")),
        ..Hints::default()
    };
    // Fluent Bit kmsg, as its docs print it (Ruby hash notation) turned into the JSON its
    // Kafka output writes.
    let docs = read("fluent-bit-kmsg-stdout-records-docs.txt");
    let line = docs.lines().next().unwrap();
    let record = line[line.find('{').unwrap()..line.rfind('}').unwrap() + 1].replace("=>", ":");
    let d = auto_message(record.as_bytes(), &hints);
    assert_eq!(
        (d.counts.rejected, d.rows.len()),
        (0, 0),
        "{record}: not a GPU line"
    );
    let xid = record.replace(
        "ERROR @wl_cfg80211_get_station : Wrong Mac address, mac = 34:a8:4e:d3:40:ec profile =20:3a:07:9e:4a:ac",
        XID,
    );
    let d = auto_message(xid.as_bytes(), &hints);
    assert_eq!(d.rows.len(), 1, "{xid}: {:?}", d.dead);
    assert_eq!(d.rows[0].kind, "xid");
    // sec 11706 + usec 732233 after boot.
    assert_eq!(
        d.rows[0].time_ns,
        k8s_common::ns("2026-11-29T03:15:06.732233Z")
    );
    // With the `@timestamp` Fluent Bit's Kafka output adds, that time.
    let stamped = xid.replacen('{', "{\"@timestamp\":1463421823.25,", 1);
    let d = auto_message(stamped.as_bytes(), &Hints::default());
    assert_eq!(d.rows[0].time_ns, 1_463_421_823_250_000_000);

    // Fluent Bit systemd (journald's names) with the kubernetes filter's metadata.
    let out = read("fluent-bit-systemd-input-record-with-kubernetes-filter-kairosdb.out");
    let record = fluent_bit_record(out.lines().next().unwrap());
    let d = auto_message(record.as_bytes(), &Hints::default());
    assert_eq!((d.counts.rejected, d.rows.len()), (0, 0), "{:?}", d.dead);
    let kernel = record
        .replace(
            "08:58:45.839 [qtp151442075-47] DEBUG [HttpParser.java:281] - filled 157/157",
            XID,
        )
        .replace("\"_TRANSPORT\":\"journal\"", "\"_TRANSPORT\":\"kernel\"");
    let d = auto_message(kernel.as_bytes(), &Hints::default());
    assert_eq!(d.rows.len(), 1, "{:?}", d.dead);
    assert_eq!(d.rows[0].node.as_deref(), Some("cube"));
    assert_eq!(d.rows[0].time_ns, 1_541_358_747_464_738_000);

    // Vector journald: `message` and `host` in place of journald's MESSAGE and _HOSTNAME
    // (the fields of its documented sample output).
    let vector = format!(
        r#"{{"timestamp":"2025-11-29T10:15:02.000443Z","source_type":"journald","message":"{XID}","host":"gke-gpu-7","__REALTIME_TIMESTAMP":"1764411302000443","__MONOTONIC_TIMESTAMP":"98694000446","_BOOT_ID":"124c781146e841ae8d9b4590df8b9231","SYSLOG_FACILITY":"0","PRIORITY":"4","_TRANSPORT":"kernel","SYSLOG_IDENTIFIER":"kernel"}}"#
    );
    let d = auto_message(vector.as_bytes(), &Hints::default());
    assert_eq!(d.rows.len(), 1, "{:?}", d.dead);
    assert_eq!(d.rows[0].node.as_deref(), Some("gke-gpu-7"));
    assert_eq!(d.rows[0].time_ns, 1_764_411_302_000_443_000);
    let doc = read("vector-journald-source-sample-output.cue");
    for field in [
        "source_type:",
        "message:",
        "host:",
        "\"__REALTIME_TIMESTAMP\":",
        "\"_TRANSPORT\":",
    ] {
        assert!(doc.contains(field), "Vector's sample names {field}");
    }
}
