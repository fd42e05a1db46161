//! `whyslow stream` into a store in an S3 bucket (SeaweedFS on loopback) from a real
//! broker (tansu): two workers of one group and a `whyslow ingest` writing the same store
//! at once, SIGKILLs of a worker followed by restarts, and restarts of the broker and of
//! the S3 server, each storing every row exactly once (offsets recorded in the Delta
//! commits that hold the rows).

mod support;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use arrow::array::{Array, StringArray};
use object_store::ObjectStoreExt;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use support::broker::Broker;
use support::produce::produce_events;
use support::s3::{S3Server, free_port};
use support::signal;
use whyslow_schemas::Table;
use whyslow_store::{Root, Store};

/// A bucket store and what reaches it.
struct Bucket {
    url: String,
    env: Vec<(String, String)>,
}

impl Bucket {
    fn open(&self) -> Option<Store> {
        let root = Root::parse_with(Path::new(&self.url), &self.env).ok()?;
        Store::open_root(root).ok()
    }

    fn whyslow(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_whyslow"));
        c.args(["--store", &self.url])
            .env_remove("WHYSLOW_STORE")
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }

    fn start_worker(&self, broker: &Broker, group: &str, topic: &str) -> Child {
        let port = free_port();
        let mut child = self
            .whyslow()
            .args(["stream", "--brokers", &broker.addr(), "--group", group])
            .args(["--topic", topic, "--flush-interval", "200ms"])
            .args(["--max-batch-rows", "5000", "--retry-budget", "2m"])
            .args(["--metrics-addr", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start whyslow stream");
        // Started once it serves its metrics: it takes over SIGTERM before that, so a stop
        // sent from here on is a graceful one. (The SIGKILL test's last worker, with every
        // row already stored by the one killed before, was otherwise stopped before its
        // handlers were in place: an exit by signal 15.)
        let deadline = Instant::now() + Duration::from_secs(120);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                child.try_wait().unwrap().is_none(),
                "whyslow stream exited while starting"
            );
            assert!(
                Instant::now() < deadline,
                "whyslow stream served no metrics within 120 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        child
    }

    fn wait_rows(&self, at_least: u64, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let n = self.open().map_or(0, |s| s.rows(Table::Events));
            if n >= at_least {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "store has {n} events, expected {at_least} within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// Every event id in the store.
    fn event_ids(&self) -> Vec<String> {
        let store = self.open().expect("the store opens");
        let (bucket, client) = store.object_store().expect("a bucket store");
        let rt = tokio::runtime::Runtime::new().unwrap();
        let mut out = Vec::new();
        for seg in store.segments(Table::Events) {
            let key = seg
                .path
                .to_str()
                .and_then(|p| p.strip_prefix(bucket.as_str().trim_end_matches('/')))
                .unwrap()
                .trim_start_matches('/')
                .to_string();
            let bytes = rt
                .block_on(async {
                    client
                        .get(&object_store::path::Path::from(key))
                        .await?
                        .bytes()
                        .await
                })
                .unwrap();
            for batch in ParquetRecordBatchReaderBuilder::try_new(bytes)
                .unwrap()
                .build()
                .unwrap()
            {
                let batch = batch.unwrap();
                let col = batch
                    .column_by_name("event_id")
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
    fn assert_exactly(&self, prefixes: &[(&str, std::ops::Range<u64>)]) {
        let ids = self.event_ids();
        let distinct: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
        let expected: usize = prefixes.iter().map(|(_, r)| r.clone().count()).sum();
        assert_eq!(distinct.len(), ids.len(), "duplicate rows in the store");
        assert_eq!(ids.len(), expected, "row count");
        for (prefix, range) in prefixes {
            for i in range.clone() {
                let id = format!("{}{prefix}{i}", whyslow_ingest::decode::envelope::ID_PREFIX);
                assert!(distinct.contains(id.as_str()), "missing {id}");
            }
        }
    }
}

fn stop_gracefully(child: Child) {
    stop_gracefully_within(child, Duration::from_secs(60));
}

fn stop_gracefully_within(mut child: Child, patience: Duration) {
    signal(&child, "-TERM");
    let deadline = Instant::now() + patience;
    while child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "no exit within {patience:?} of SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "whyslow stream exited with {status} after SIGTERM"
    );
}

/// Envelope lines with ids `{prefix}{i}`, as `produce_events` makes them.
fn envelope_lines(prefix: &str, range: std::ops::Range<u64>) -> String {
    range
        .map(|i| {
            format!(
                "{{\"time\":{},\"layer\":\"framework\",\"source\":\"sdk\",\"kind\":\"test_event\",\"id\":\"{prefix}{i}\",\"workload\":\"w\",\"attrs\":{{\"n\":\"{i}\"}}}}\n",
                1_764_411_302 + i
            )
        })
        .collect()
}

#[test]
fn two_workers_and_an_ingest_write_one_bucket_store_exactly_once() {
    let s3 = S3Server::start();
    let bucket = Bucket {
        url: s3.url("shared"),
        env: s3.env(),
    };
    let broker = Broker::start();
    broker.create_topic("s3group", 4);
    produce_events(&broker, "s3group", 4, "g-", 0..20_000);
    let a = bucket.start_worker(&broker, "s3split", "s3group=envelope");
    let b = bucket.start_worker(&broker, "s3split", "s3group=envelope");
    // While both stream, a batch ingest of other rows into the same store.
    let mut ingest = bucket
        .whyslow()
        .args(["ingest", "--format", "envelope", "--no-progress", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = envelope_lines("f-", 0..8_000);
    ingest
        .stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    produce_events(&broker, "s3group", 4, "h-", 0..10_000);
    let out = ingest.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    bucket.wait_rows(38_000, Duration::from_secs(300));
    stop_gracefully(a);
    stop_gracefully(b);
    bucket.assert_exactly(&[("g-", 0..20_000), ("h-", 0..10_000), ("f-", 0..8_000)]);
    let offsets = bucket.open().unwrap().kafka_offsets();
    assert_eq!(offsets.values().sum::<i64>(), 30_000, "{offsets:?}");
}

#[test]
fn sigkill_of_a_worker_on_a_bucket_store_then_restart_loses_and_duplicates_nothing() {
    let s3 = S3Server::start();
    let bucket = Bucket {
        url: s3.url("killed"),
        env: s3.env(),
    };
    let broker = Broker::start();
    broker.create_topic("s3kill", 2);
    produce_events(&broker, "s3kill", 2, "k-", 0..30_000);
    // A fresh group per restart: tansu 0.6 does not hand a SIGKILLed member's partitions
    // to a new member of the same group; the start offsets come from the store anyway.
    for round in 0..2u64 {
        let worker = bucket.start_worker(&broker, &format!("s3kill-{round}"), "s3kill=envelope");
        bucket.wait_rows(8_000 * (round + 1), Duration::from_secs(180));
        signal(&worker, "-KILL");
        let mut worker = worker;
        let _ = worker.wait();
        assert!(bucket.open().is_some(), "the store opens after SIGKILL");
    }
    let worker = bucket.start_worker(&broker, "s3kill-final", "s3kill=envelope");
    bucket.wait_rows(30_000, Duration::from_secs(300));
    stop_gracefully(worker);
    bucket.assert_exactly(&[("k-", 0..30_000)]);
}

/// The broker and then the S3 server go down and come back while a worker consumes into a
/// bucket store (its writer kept between micro-batches): the worker waits the outage out
/// within its retry budget, and every row is stored exactly once.
#[test]
fn broker_and_bucket_restarts_during_consumption_lose_nothing() {
    let mut s3 = S3Server::start();
    let bucket = Bucket {
        url: s3.url("restarts"),
        env: s3.env(),
    };
    let mut broker = Broker::start();
    broker.create_topic("s3restart", 2);
    produce_events(&broker, "s3restart", 2, "r-", 0..20_000);
    let mut worker = bucket.start_worker(&broker, "s3restart", "s3restart=envelope");
    bucket.wait_rows(2_000, Duration::from_secs(120));
    broker.stop();
    std::thread::sleep(Duration::from_secs(3));
    broker.restart();
    produce_events(&broker, "s3restart", 2, "s-", 0..10_000);
    bucket.wait_rows(22_000, Duration::from_secs(180));
    // The bucket is down while messages arrive, for longer than the S3 client's own
    // retries last (4 retries in under a second): the worker holds its batch, stops
    // reading and commits it when the bucket is back, within its retry budget.
    s3.stop();
    produce_events(&broker, "s3restart", 2, "t-", 0..5_000);
    std::thread::sleep(Duration::from_secs(8));
    assert!(
        worker.try_wait().expect("worker status").is_none(),
        "the worker gave up on an 8 s outage of the bucket"
    );
    s3.start_again();
    produce_events(&broker, "s3restart", 2, "t-", 5_000..10_000);
    bucket.wait_rows(40_000, Duration::from_secs(300));
    // The stop lets the live analyzer finish its last analysis; after a restart of the
    // S3 server a request on a connection pooled before it can wait out the client's
    // 30 s timeout (the lease renewal did), so the stop gets longer here.
    stop_gracefully_within(worker, Duration::from_secs(240));
    bucket.assert_exactly(&[("r-", 0..20_000), ("s-", 0..10_000), ("t-", 0..10_000)]);
}
