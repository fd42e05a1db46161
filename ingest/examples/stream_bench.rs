//! Kafka ingest throughput: `whyslow stream`'s worker draining a pre-produced envelope
//! topic into a store, against a bare rdkafka consumer that only reads the same topic on
//! the same broker.
//!
//! `cargo run --release -p whyslow-ingest --example stream_bench -- BROKERS [MESSAGES]`
//! (start a broker first, e.g. tansu on 127.0.0.1:19092).

use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use whyslow_ingest::stream::{self, StreamOptions, TopicSpec};
use whyslow_schemas::Table;
use whyslow_store::Store;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let brokers = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "127.0.0.1:19092".into());
    let n: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let topic = format!("bench-{}", std::process::id());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(create_topic(&brokers, &topic, 4));
    produce(&brokers, &topic, n);
    let bare = rt.block_on(bare_consumer(&brokers, &topic, n));
    let (worker, bytes) = rt.block_on(whyslow_worker(&brokers, &topic, n));
    println!("messages: {n} (envelope metrics, 4 partitions)");
    println!(
        "bare rdkafka consumer: {:.0} msg/s ({:.2} s)",
        n as f64 / bare,
        bare
    );
    println!(
        "whyslow stream worker: {:.0} msg/s ({:.2} s) into the store, {:.1} bytes/row on disk",
        n as f64 / worker,
        worker,
        bytes
    );
    println!(
        "ratio: {:.0}% of the bare consumer's rate",
        100.0 * bare / worker
    );
}

async fn create_topic(brokers: &str, topic: &str, partitions: i32) {
    use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
    let admin: AdminClient<rdkafka::client::DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()
        .expect("admin client");
    let res = admin
        .create_topics(
            &[NewTopic::new(topic, partitions, TopicReplication::Fixed(1))],
            &AdminOptions::new(),
        )
        .await
        .expect("create topic");
    for r in res {
        r.expect("topic created");
    }
}

fn produce(brokers: &str, topic: &str, n: u64) {
    let p: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("linger.ms", "50")
        .set("batch.num.messages", "10000")
        .create()
        .expect("producer");
    let started = Instant::now();
    for i in 0..n {
        let payload = format!(
            r#"{{"time":{},"layer":"framework","source":"sdk","metric":"step_time_seconds","value":{:.3},"workload":"bench","run_id":"r1","rank":{},"step":{},"node":"node-{}"}}"#,
            1_764_411_302 + i / 8,
            1.9 + (i % 7) as f64 * 0.01,
            i % 8,
            i / 8,
            i % 8
        );
        let mut record = BaseRecord::<(), str>::to(topic)
            .partition((i % 4) as i32)
            .payload(&payload);
        while let Err((_, r)) = p.send(record) {
            record = r;
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    p.flush(Duration::from_secs(300)).expect("delivered");
    eprintln!(
        "produced {n} messages in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

async fn bare_consumer(brokers: &str, topic: &str, n: u64) -> f64 {
    let c: StreamConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", format!("{topic}-bare"))
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    // Both sides are timed from subscribing: each pays one group join.
    let started = Instant::now();
    c.subscribe(&[topic]).expect("subscribe");
    let mut seen = 0u64;
    while seen < n {
        let m = c.recv().await.expect("message");
        // Touch the payload as a consumer that does nothing else would.
        std::hint::black_box(rdkafka::Message::payload(&m));
        seen += 1;
    }
    started.elapsed().as_secs_f64()
}

async fn whyslow_worker(brokers: &str, topic: &str, n: u64) -> (f64, f64) {
    let dir = tempfile::tempdir().expect("temp store");
    let mut opts = StreamOptions::new(
        dir.path().to_path_buf(),
        brokers,
        &format!("{topic}-whyslow"),
        vec![TopicSpec::parse(&format!("{topic}=envelope")).expect("topic")],
    );
    opts.flush_interval = Duration::from_secs(1);
    let root = dir.path().to_path_buf();
    let started = Instant::now();
    let shutdown = async move {
        while Store::open(&root)
            .map(|s| s.rows(Table::Metrics))
            .unwrap_or(0)
            < n
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let summary = stream::run(
        opts,
        |f| Some(whyslow_ingest::decode::decoder_for(f)),
        None,
        shutdown,
    )
    .await
    .expect("worker");
    let secs = started.elapsed().as_secs_f64();
    let store = Store::open(dir.path()).expect("store");
    let bytes: u64 = store.segments(Table::Metrics).iter().map(|s| s.bytes).sum();
    assert_eq!(summary.rows_written, n);
    (secs, bytes as f64 / n as f64)
}
