//! Producing envelope events to a test broker, spread over partitions, ids `{prefix}{i}`.

use std::time::Duration;

use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};

use super::broker::Broker;

pub fn producer(broker: &Broker) -> ThreadedProducer<DefaultProducerContext> {
    broker
        .client_config()
        .set("linger.ms", "20")
        .set("batch.num.messages", "5000")
        .set("enable.idempotence", "false")
        .create()
        .expect("producer")
}

/// Produces envelope events with ids `{prefix}{i}` for i in `range`, spread over
/// `partitions` partitions.
pub fn produce_events(
    broker: &Broker,
    topic: &str,
    partitions: i32,
    prefix: &str,
    range: std::ops::Range<u64>,
) {
    let p = producer(broker);
    for i in range {
        let payload = format!(
            r#"{{"time":{},"layer":"framework","source":"sdk","kind":"test_event","id":"{prefix}{i}","workload":"w","attrs":{{"n":"{i}"}}}}"#,
            1_764_411_302 + i
        );
        let partition = (i % partitions as u64) as i32;
        let key = format!("k{i}");
        let mut record = BaseRecord::to(topic)
            .partition(partition)
            .key(&key)
            .payload(&payload);
        loop {
            match p.send(record) {
                Ok(()) => break,
                Err((e, r)) => {
                    // Queue full: let the background thread deliver, then retry.
                    assert!(
                        matches!(
                            e.rdkafka_error_code(),
                            Some(rdkafka::types::RDKafkaErrorCode::QueueFull)
                        ),
                        "{e}"
                    );
                    record = r;
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
    }
    p.flush(Duration::from_secs(60))
        .expect("all messages delivered");
}
