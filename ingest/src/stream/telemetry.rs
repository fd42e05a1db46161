//! The worker's own observability: counters, batch latency and consumer lag, served in
//! the Prometheus text format on `--metrics-addr`.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Labels of a per-topic series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TopicLabels {
    pub topic: String,
}

/// Labels of a per-partition series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PartitionLabels {
    pub topic: String,
    pub partition: i32,
}

/// Every series the worker exports.
pub struct Telemetry {
    registry: Registry,
    /// Messages received from Kafka.
    pub consumed: Family<TopicLabels, Counter>,
    /// Rows written to the store (events, metrics, dead letters).
    pub written: Counter,
    /// Rows the store already held (redelivered messages).
    pub duplicates: Counter,
    /// Messages skipped because the store already holds their offsets.
    pub redelivered: Family<TopicLabels, Counter>,
    /// Records rejected to dead_letters.
    pub rejected: Family<TopicLabels, Counter>,
    /// Seconds from a micro-batch's flush to its store and Kafka commits.
    pub batch_seconds: Histogram,
    /// Messages between the committed store offset and the partition's high watermark.
    pub lag: Family<PartitionLabels, Gauge>,
    /// 1 while the broker answers, 0 while it does not.
    pub broker_up: Gauge,
}

impl Telemetry {
    /// Registers every series under the `whyslow_stream_` prefix.
    pub fn new() -> Arc<Telemetry> {
        let mut registry = Registry::with_prefix("whyslow_stream");
        let t = Telemetry {
            consumed: Family::default(),
            written: Counter::default(),
            duplicates: Counter::default(),
            redelivered: Family::default(),
            rejected: Family::default(),
            batch_seconds: Histogram::new(exponential_buckets(0.001, 2.0, 16)),
            lag: Family::default(),
            broker_up: Gauge::default(),
            registry: Registry::default(),
        };
        registry.register(
            "consumed_messages",
            "Messages received from Kafka",
            t.consumed.clone(),
        );
        registry.register(
            "written_rows",
            "Rows written to the store",
            t.written.clone(),
        );
        registry.register(
            "duplicate_rows",
            "Rows the store already held",
            t.duplicates.clone(),
        );
        registry.register(
            "redelivered_messages",
            "Messages skipped because the store already holds their offsets",
            t.redelivered.clone(),
        );
        registry.register(
            "rejected_records",
            "Records rejected to dead_letters",
            t.rejected.clone(),
        );
        registry.register(
            "batch_commit_seconds",
            "Seconds to commit a micro-batch to the store and Kafka",
            t.batch_seconds.clone(),
        );
        registry.register(
            "consumer_lag_messages",
            "High watermark minus committed offset",
            t.lag.clone(),
        );
        registry.register(
            "broker_up",
            "1 while the broker answers",
            t.broker_up.clone(),
        );
        Arc::new(Telemetry { registry, ..t })
    }

    /// The current values in the Prometheus text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Encoding into a String cannot fail: fmt::Write for String is infallible.
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String");
        out
    }

    /// Records how long a commit took.
    pub fn observe_batch(&self, d: Duration) {
        self.batch_seconds.observe(d.as_secs_f64());
    }
}

/// Connections the metrics endpoint serves at once; more wait to be accepted.
pub const MAX_CONNECTIONS: usize = 64;

/// Serves `GET /metrics` (any path, in fact) on `addr` until the task is dropped.
pub async fn serve(
    addr: &str,
    telemetry: Arc<Telemetry>,
) -> std::io::Result<tokio::task::JoinHandle<()>> {
    let listener = TcpListener::bind(addr).await?;
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    Ok(tokio::spawn(async move {
        loop {
            // A connection is accepted only when a slot is free: a flood of idle
            // connections waits in the kernel's backlog instead of taking descriptors.
            let Ok(slot) = slots.clone().acquire_owned().await else {
                return;
            };
            let mut sock = match listener.accept().await {
                Ok((sock, _)) => sock,
                Err(_) => {
                    // Out of descriptors (EMFILE) or a connection reset before accept:
                    // wait a moment rather than spin on an error that repeats at once.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let t = telemetry.clone();
            tokio::spawn(async move {
                let _slot = slot;
                let answer = async {
                    let mut buf = [0u8; 4096];
                    // Read the request head; its content does not matter.
                    let _ = tokio::time::timeout(Duration::from_secs(2), sock.read(&mut buf)).await;
                    let body = t.render();
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = sock.write_all(head.as_bytes()).await;
                    let _ = sock.write_all(body.as_bytes()).await;
                    let _ = sock.shutdown().await;
                };
                // A client that never reads its answer cannot hold a slot for ever.
                let _ = tokio::time::timeout(Duration::from_secs(10), answer).await;
            });
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loopback address nobody listens on yet.
    fn free_addr() -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().to_string()
    }

    /// One scrape of `addr`: the whole response.
    async fn scrape(addr: &str) -> String {
        let mut sock = tokio::net::TcpStream::connect(addr).await.unwrap();
        sock.write_all(b"GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut resp = String::new();
        sock.read_to_string(&mut resp).await.unwrap();
        resp
    }

    #[tokio::test]
    async fn serves_the_counters() {
        let t = Telemetry::new();
        t.consumed
            .get_or_create(&TopicLabels {
                topic: "envelope".into(),
            })
            .inc_by(3);
        t.lag
            .get_or_create(&PartitionLabels {
                topic: "envelope".into(),
                partition: 1,
            })
            .set(42);
        let addr = free_addr();
        let server = serve(&addr, t.clone()).await.unwrap();
        let resp = scrape(&addr).await;
        server.abort();
        assert!(resp.starts_with("HTTP/1.1 200 OK"), "{resp}");
        assert!(
            resp.contains("whyslow_stream_consumed_messages_total{topic=\"envelope\"} 3"),
            "{resp}"
        );
        assert!(
            resp.contains(
                "whyslow_stream_consumer_lag_messages{topic=\"envelope\",partition=\"1\"} 42"
            ),
            "{resp}"
        );
    }

    /// Idle connections beyond the bound do not take the endpoint down: they wait, time
    /// out, and a scrape is answered.
    #[tokio::test]
    async fn a_flood_of_idle_connections_does_not_starve_a_scrape() {
        let addr = free_addr();
        let server = serve(&addr, Telemetry::new()).await.unwrap();
        let mut idle = Vec::new();
        for _ in 0..3 * MAX_CONNECTIONS {
            idle.push(tokio::net::TcpStream::connect(&addr).await.unwrap());
        }
        let resp = tokio::time::timeout(Duration::from_secs(30), scrape(&addr))
            .await
            .expect("answered while idle connections wait");
        server.abort();
        drop(idle);
        assert!(resp.starts_with("HTTP/1.1 200 OK"), "{resp}");
    }
}
