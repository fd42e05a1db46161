//! Live incidents end to end against a real broker (tansu): the seed scenario's messages
//! (produced as in `tests/stream_scenarios.rs`) go through Kafka into `whyslow stream`,
//! whose live analyzers publish incidents to `--incidents-topic` and run `--on-incident`;
//! the latest revision of each incident must equal the slowdowns of `whyslow report` over
//! the same store.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::Message as _;
use rdkafka::consumer::{BaseConsumer, Consumer};
use support::broker::Broker;
use support::scenario::produce_scenario;
use support::signal;
use whyslow_analyzers::report::{Report, Slowdown};
use whyslow_fixtures::messages::scenario_messages;
use whyslow_store::Store;

/// The latest revision of each incident on the topic (key = incident id).
fn latest_incidents(broker: &Broker) -> BTreeMap<String, serde_json::Value> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", broker.addr())
        .set("group.id", "incident-reader")
        .set("auto.offset.reset", "earliest")
        .create()
        .unwrap();
    consumer.subscribe(&["incidents"]).unwrap();
    let mut latest: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    let mut quiet_since = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(120);
    // Read until nothing new for 5 s (after at least one message).
    while Instant::now() < deadline
        && (latest.is_empty() || quiet_since.elapsed() < Duration::from_secs(5))
    {
        if let Some(Ok(m)) = consumer.poll(Duration::from_millis(300)) {
            quiet_since = Instant::now();
            let key = String::from_utf8(m.key().unwrap().to_vec()).unwrap();
            let v: serde_json::Value = serde_json::from_slice(m.payload().unwrap()).unwrap();
            assert_eq!(v["incident_id"], key.as_str(), "keyed by incident id");
            let rev = v["revision"].as_i64().unwrap();
            if latest
                .get(&key)
                .is_none_or(|old| old["revision"].as_i64() < Some(rev))
            {
                latest.insert(key, v);
            }
        }
    }
    latest
}

fn sorted(mut s: Vec<Slowdown>) -> Vec<Slowdown> {
    s.sort_by(|a, b| (&a.start, &a.slowdown_id).cmp(&(&b.start, &b.slowdown_id)));
    s
}

#[test]
fn seed_scenario_incidents_stream_out_and_equal_the_report() {
    let scenario = whyslow_fixtures::committed_scenarios_dir().join("seed-preemption");
    let messages = scenario_messages(&scenario).expect("scenario messages");
    let broker = Broker::start();
    broker.create_topic("incidents", 1);
    let produced = produce_scenario(&broker, "seed", &messages);

    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let hook_out = tmp.path().join("hook.jsonl");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_whyslow"));
    cmd.args(["--store", store.to_str().unwrap(), "stream"])
        .args(["--brokers", &broker.addr(), "--group", "live"]);
    for t in produced.keys() {
        let format = t.rsplit_once('.').expect("prefix.format").1;
        cmd.args(["--topic", &format!("{t}={format}")]);
    }
    let worker = cmd
        .args(["--incidents-topic", "incidents"])
        .args(["--on-incident", &format!("cat >> {}", hook_out.display())])
        .args(["--flush-interval", "200ms", "--metrics-addr", "off"])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    // Wait until the store holds every message, then stop the worker gracefully: it
    // flushes, and its live analyzer publishes the final state before it exits.
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let stored: i64 = Store::open(&store)
            .map(|s| s.kafka_offsets().values().sum())
            .unwrap_or(0);
        if stored == messages.len() as i64 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{stored} of {} stored",
            messages.len()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut worker = worker;
    signal(&worker, "-TERM");
    let status = worker.wait().unwrap();
    assert!(status.success(), "whyslow stream exited with {status}");

    let latest = latest_incidents(&broker);
    let standing: Vec<Slowdown> = latest
        .values()
        .filter(|v| v["status"] != "retracted")
        .map(|v| serde_json::from_value(v.clone()).expect("a slowdown object"))
        .collect();

    let out = Command::new(env!("CARGO_BIN_EXE_whyslow"))
        .args([
            "--store",
            store.to_str().unwrap(),
            "report",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let report: Report = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!report.slowdowns.is_empty());
    assert_eq!(sorted(standing), sorted(report.slowdowns.clone()));
    // The seed's verdict is the preemption, named as such in the stream.
    assert!(
        latest
            .values()
            .any(|v| v["causes"][0]["cause"] == "orchestrator.preemption")
    );

    // The hook ran for every incident (at least when it opened), with its JSON.
    let hooked: BTreeSet<String> = std::fs::read_to_string(&hook_out)
        .expect("the --on-incident command ran")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("one JSON per run");
            v["incident_id"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(hooked, latest.keys().cloned().collect::<BTreeSet<_>>());

    // The same revisions are in the log, as the `incidents` table.
    let sql = Command::new(env!("CARGO_BIN_EXE_whyslow"))
        .args(["--store", store.to_str().unwrap(), "sql", "--format", "csv"])
        .arg("SELECT count(DISTINCT incident_id) AS n FROM incidents")
        .output()
        .unwrap();
    assert!(sql.status.success());
    let text = String::from_utf8(sql.stdout).unwrap();
    assert_eq!(
        text.lines().nth(1),
        Some(latest.len().to_string().as_str()),
        "{text}"
    );
}
