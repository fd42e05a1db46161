//! `whyslow stream` against a real broker (tansu): exactly-once into the store across
//! crashes (a traceback open at the crash included), rebalances, poison messages and
//! broker restarts.

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use arrow::array::{Array, StringArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use rdkafka::producer::{BaseRecord, Producer};
use support::broker::Broker;
use support::produce::{produce_events, producer};
use support::s3::free_port;
use support::signal;
use whyslow_schemas::Table;
use whyslow_store::Store;

fn produce_raw(broker: &Broker, topic: &str, partition: i32, payloads: &[&[u8]]) {
    let p = producer(broker);
    for payload in payloads {
        p.send(
            BaseRecord::<(), [u8]>::to(topic)
                .partition(partition)
                .payload(payload),
        )
        .expect("queued");
    }
    p.flush(Duration::from_secs(30)).expect("delivered");
}

fn start_worker(store: &Path, broker: &Broker, group: &str, topic: &str) -> Child {
    start_worker_with(store, broker, group, topic, &[])
}

fn start_worker_with(
    store: &Path,
    broker: &Broker,
    group: &str,
    topic: &str,
    extra: &[&str],
) -> Child {
    Command::new(env!("CARGO_BIN_EXE_whyslow"))
        .args([
            "--store",
            store.to_str().unwrap(),
            "stream",
            "--brokers",
            &broker.addr(),
            "--group",
            group,
        ])
        .args([
            "--topic",
            topic,
            "--flush-interval",
            "200ms",
            "--max-batch-rows",
            "5000",
        ])
        .args([
            "--metrics-addr",
            &format!("127.0.0.1:{}", free_port()),
            "--retry-budget",
            "2m",
        ])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start whyslow stream")
}

fn stop_gracefully(mut child: Child) {
    signal(&child, "-TERM");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(
                status.success(),
                "whyslow stream exited with {status} after SIGTERM"
            );
            return;
        }
        assert!(
            Instant::now() < deadline,
            "whyslow stream did not stop within 60 s of SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn kill_hard(mut child: Child) {
    signal(&child, "-KILL");
    let _ = child.wait();
}

fn rows(store: &Path, table: Table) -> u64 {
    Store::open(store).map(|s| s.rows(table)).unwrap_or(0)
}

fn wait_rows(store: &Path, table: Table, at_least: u64, within: Duration) -> u64 {
    let deadline = Instant::now() + within;
    loop {
        let n = rows(store, table);
        if n >= at_least {
            return n;
        }
        assert!(
            Instant::now() < deadline,
            "store has {n} {table} rows, expected {at_least} within {within:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Every `column` value of a table, in store order.
fn column(store: &Path, table: Table, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for seg in Store::open(store).unwrap().segments(table) {
        let file = std::fs::File::open(&seg.path).unwrap();
        for batch in ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap()
        {
            let batch = batch.unwrap();
            let col = batch
                .column_by_name(name)
                .unwrap()
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap()
                .clone();
            out.extend((0..col.len()).map(|i| col.value(i).to_string()));
        }
    }
    out
}

/// Asserts the store holds exactly the ids `{prefix}{i}` for i in `range`, once each.
fn assert_exactly(store: &Path, prefixes: &[(&str, std::ops::Range<u64>)]) {
    let ids = column(store, Table::Events, "event_id");
    let distinct: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
    let expected: usize = prefixes.iter().map(|(_, r)| r.clone().count()).sum();
    assert_eq!(distinct.len(), ids.len(), "duplicate rows in the store");
    assert_eq!(ids.len(), expected, "row count");
    // Records that carry an `id` have the event id `id:<id>` (contracts/envelope.md).
    for (prefix, range) in prefixes {
        for i in range.clone() {
            let id = format!("{}{prefix}{i}", whyslow_ingest::decode::envelope::ID_PREFIX);
            assert!(distinct.contains(id.as_str()), "missing {id}");
        }
    }
}

#[test]
fn hundred_thousand_messages_over_four_partitions_exactly_once() {
    let broker = Broker::start();
    broker.create_topic("env100k", 4);
    produce_events(&broker, "env100k", 4, "a-", 0..100_000);
    let store = tempfile::tempdir().unwrap();
    let worker = start_worker(store.path(), &broker, "g100k", "env100k=envelope");
    // A liveness bound, not a speed test (27 s alone here; the binary's other tests and
    // their brokers share the machine).
    wait_rows(
        store.path(),
        Table::Events,
        100_000,
        Duration::from_secs(900),
    );
    stop_gracefully(worker);
    assert_exactly(store.path(), &[("a-", 0..100_000)]);
    let offsets = Store::open(store.path()).unwrap().kafka_offsets();
    assert_eq!(offsets.len(), 4);
    assert_eq!(offsets.values().sum::<i64>(), 100_000);
}

#[test]
fn sigkill_mid_stream_then_restart_loses_and_duplicates_nothing() {
    let broker = Broker::start();
    broker.create_topic("envkill", 4);
    produce_events(&broker, "envkill", 4, "k-", 0..60_000);
    let store = tempfile::tempdir().unwrap();
    // Each restart joins under a fresh group id: tansu 0.6 does not hand a SIGKILLed
    // member's partitions to a new member of the same group (a real broker does after
    // session.timeout.ms). Kafka's committed offsets play no part in what is stored: the
    // worker starts every partition at the offset the store recorded with its segments.
    for round in 0..3 {
        let worker = start_worker(
            store.path(),
            &broker,
            &format!("gkill-{round}"),
            "envkill=envelope",
        );
        let target = 10_000 * (round + 1);
        wait_rows(
            store.path(),
            Table::Events,
            target,
            Duration::from_secs(120),
        );
        kill_hard(worker);
        // The store must open after every kill.
        Store::open(store.path()).expect("store opens after SIGKILL");
    }
    let worker = start_worker(store.path(), &broker, "gkill-final", "envkill=envelope");
    wait_rows(
        store.path(),
        Table::Events,
        60_000,
        Duration::from_secs(300),
    );
    stop_gracefully(worker);
    assert_exactly(store.path(), &[("k-", 0..60_000)]);
}

#[test]
fn two_workers_split_partitions_through_a_rebalance() {
    let broker = Broker::start();
    broker.create_topic("envgroup", 4);
    produce_events(&broker, "envgroup", 4, "g-", 0..20_000);
    let store = tempfile::tempdir().unwrap();
    let a = start_worker(store.path(), &broker, "gsplit", "envgroup=envelope");
    wait_rows(store.path(), Table::Events, 5_000, Duration::from_secs(120));
    let b = start_worker(store.path(), &broker, "gsplit", "envgroup=envelope");
    produce_events(&broker, "envgroup", 4, "h-", 0..20_000);
    let c = start_worker(store.path(), &broker, "gsplit", "envgroup=envelope");
    produce_events(&broker, "envgroup", 4, "i-", 0..10_000);
    wait_rows(
        store.path(),
        Table::Events,
        50_000,
        Duration::from_secs(300),
    );
    // One leaves: the others take over its partitions.
    stop_gracefully(c);
    produce_events(&broker, "envgroup", 4, "j-", 0..10_000);
    wait_rows(
        store.path(),
        Table::Events,
        60_000,
        Duration::from_secs(300),
    );
    stop_gracefully(a);
    stop_gracefully(b);
    assert_exactly(
        store.path(),
        &[
            ("g-", 0..20_000),
            ("h-", 0..20_000),
            ("i-", 0..10_000),
            ("j-", 0..10_000),
        ],
    );
}

#[test]
fn a_poison_message_goes_to_dead_letters_and_the_partition_moves_on() {
    let broker = Broker::start();
    broker.create_topic("envpoison", 1);
    let good = br#"{"time":"2026-11-29T10:00:00Z","kind":"test_event","layer":"framework","source":"sdk","id":"p-1"}"#;
    let bad = b"{\"time\": not json at all";
    let good2 = br#"{"time":"2026-11-29T10:00:01Z","kind":"test_event","layer":"framework","source":"sdk","id":"p-2"}"#;
    produce_raw(&broker, "envpoison", 0, &[good, bad, good2]);
    let store = tempfile::tempdir().unwrap();
    let worker = start_worker(store.path(), &broker, "gpoison", "envpoison=envelope");
    wait_rows(store.path(), Table::Events, 2, Duration::from_secs(60));
    wait_rows(store.path(), Table::DeadLetters, 1, Duration::from_secs(60));
    stop_gracefully(worker);
    let refs = column(store.path(), Table::DeadLetters, "source_ref");
    assert_eq!(refs, vec!["envpoison/0/1".to_string()]);
    let errors = column(store.path(), Table::DeadLetters, "error");
    assert!(!errors[0].is_empty());
}

/// A broker reached only over TLS (tansu behind stunnel, a certificate for 127.0.0.1):
/// the worker, configured with `-X` like any librdkafka client, consumes over TLS and
/// verifies the broker's certificate; without the CA it reads nothing.
#[test]
fn tls_round_trip_with_kafka_client_properties() {
    let broker = Broker::start_tls();
    let ca = broker.ca().unwrap().display().to_string();
    broker.create_topic("envtls", 1);
    produce_events(&broker, "envtls", 1, "t-", 0..500);
    // Without the broker's CA the handshake fails: nothing arrives.
    let store = tempfile::tempdir().unwrap();
    let untrusting = start_worker_with(
        store.path(),
        &broker,
        "gtls-0",
        "envtls",
        &["-X", "security.protocol=ssl"],
    );
    std::thread::sleep(Duration::from_secs(5));
    stop_gracefully(untrusting);
    assert_eq!(rows(store.path(), Table::Events), 0);
    let worker = start_worker_with(
        store.path(),
        &broker,
        "gtls-1",
        "envtls",
        &[
            "-X",
            "security.protocol=ssl",
            "-X",
            &format!("ssl.ca.location={ca}"),
        ],
    );
    wait_rows(store.path(), Table::Events, 500, Duration::from_secs(60));
    stop_gracefully(worker);
    assert_exactly(store.path(), &[("t-", 0..500)]);
}

/// What the OpenTelemetry Collector's Kafka exporter publishes (OTLP/protobuf, its
/// default, and OTLP/JSON) on a topic given no format: a kernel Xid line shipped as a log
/// record, and opentelemetry-proto's metrics example.
#[test]
fn otlp_from_the_collectors_kafka_exporter_is_read_with_no_format() {
    use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
    use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
    use prost::Message;

    let broker = Broker::start();
    broker.create_topic("otlp", 1);
    let logs = r#"{"resourceLogs":[{"resource":{"attributes":[{"key":"k8s.node.name","value":{"stringValue":"gpu-node-3"}}]},"scopeLogs":[{"logRecords":[{"timeUnixNano":"1764410400000000000","body":{"stringValue":"NVRM: Xid (PCI:0000:8a:00): 79, pid=1234, name=python, GPU has fallen off the bus."}}]}]}]}"#;
    let logs_proto = serde_json::from_str::<ExportLogsServiceRequest>(logs)
        .unwrap()
        .encode_to_vec();
    let example = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/samples/collectors/otlp-json-examples-metrics.json"),
    )
    .unwrap();
    let metrics_json =
        serde_json::to_string(&serde_json::from_str::<serde_json::Value>(&example).unwrap())
            .unwrap();
    let metrics_proto = serde_json::from_str::<ExportMetricsServiceRequest>(&metrics_json)
        .unwrap()
        .encode_to_vec();
    // Ten seconds later as JSON: rows of their own (the store keeps one of identical rows).
    let metrics_json = metrics_json.replace("1544712660300000000", "1544712670300000000");
    produce_raw(
        &broker,
        "otlp",
        0,
        &[&logs_proto, metrics_json.as_bytes(), &metrics_proto],
    );
    let store = tempfile::tempdir().unwrap();
    let worker = start_worker(store.path(), &broker, "gotlp", "otlp");
    wait_rows(store.path(), Table::Metrics, 16, Duration::from_secs(60));
    wait_rows(store.path(), Table::Events, 1, Duration::from_secs(60));
    stop_gracefully(worker);
    assert_eq!(rows(store.path(), Table::DeadLetters), 0);
    assert_eq!(column(store.path(), Table::Events, "kind"), ["xid"]);
    assert_eq!(column(store.path(), Table::Events, "node"), ["gpu-node-3"]);
}

#[test]
fn broker_restart_during_consumption_loses_nothing() {
    let mut broker = Broker::start();
    broker.create_topic("envrestart", 2);
    produce_events(&broker, "envrestart", 2, "r-", 0..20_000);
    let store = tempfile::tempdir().unwrap();
    let worker = start_worker(store.path(), &broker, "grestart", "envrestart=envelope");
    wait_rows(store.path(), Table::Events, 2_000, Duration::from_secs(120));
    broker.stop();
    std::thread::sleep(Duration::from_secs(3));
    broker.restart();
    produce_events(&broker, "envrestart", 2, "s-", 0..10_000);
    wait_rows(
        store.path(),
        Table::Events,
        30_000,
        Duration::from_secs(300),
    );
    stop_gracefully(worker);
    assert_exactly(store.path(), &[("r-", 0..20_000), ("s-", 0..10_000)]);
}

/// Produces CRI lines of `pod`'s trainer container, one message each, to partition 0.
fn produce_log_lines(broker: &Broker, topic: &str, pod: &str, lines: &[&str]) {
    use rdkafka::message::{Header, OwnedHeaders};
    let p = producer(broker);
    let path = format!("/var/log/pods/ml_{pod}_1234/trainer/0.log");
    for line in lines {
        let payload = format!("2026-11-29T10:00:00.000000000Z stderr F {line}");
        let headers = OwnedHeaders::new().insert(Header {
            key: "path",
            value: Some(path.as_bytes()),
        });
        p.send(
            BaseRecord::<str, str>::to(topic)
                .partition(0)
                .payload(&payload)
                .headers(headers),
        )
        .expect("queue has room for a few lines");
    }
    p.flush(Duration::from_secs(30)).expect("delivered");
}

/// The store's recorded next offset of `topic`/0, once it has one.
fn wait_offset(store: &Path, topic: &str, within: Duration) -> i64 {
    let deadline = Instant::now() + within;
    loop {
        let offset = Store::open(store)
            .ok()
            .and_then(|s| s.kafka_offsets().get(&(topic.to_string(), 0)).copied());
        if let Some(o) = offset {
            return o;
        }
        assert!(
            Instant::now() < deadline,
            "no offset of {topic}/0 in the store within {within:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

// Found by the hostile-input review: the offsets of a traceback's first lines were
// committed while the decoder still held them, so a SIGKILL lost the traceback.
#[test]
fn a_traceback_open_at_a_sigkill_is_read_whole_after_the_restart() {
    let broker = Broker::start();
    broker.create_topic("tbkill", 1);
    let head = "Traceback (most recent call last):";
    let frame = "  File \"train.py\", line 10, in <module>";
    produce_log_lines(&broker, "tbkill", "a-0-abcde", &[head, frame]);
    let busy: Vec<String> = (0..50).map(|i| format!("epoch 1 batch {i}")).collect();
    let busy: Vec<&str> = busy.iter().map(String::as_str).collect();
    produce_log_lines(&broker, "tbkill", "b-0-abcde", &busy);
    let store = tempfile::tempdir().unwrap();
    let worker = start_worker(store.path(), &broker, "gtb-1", "tbkill=container-log");
    // The worker committed what it read; the offset stays where the open traceback began.
    assert_eq!(
        wait_offset(store.path(), "tbkill", Duration::from_secs(120)),
        0
    );
    kill_hard(worker);
    produce_log_lines(&broker, "tbkill", "a-0-abcde", &["KeyError: 'x'"]);
    let worker = start_worker(store.path(), &broker, "gtb-2", "tbkill=container-log");
    wait_rows(store.path(), Table::Events, 1, Duration::from_secs(120));
    stop_gracefully(worker);
    assert_eq!(
        column(store.path(), Table::Events, "message"),
        ["KeyError: 'x'"],
        "the traceback, once"
    );
    assert_eq!(
        Store::open(store.path()).unwrap().kafka_offsets()[&("tbkill".to_string(), 0)],
        53
    );
}
