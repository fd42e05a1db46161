//! A scenario's messages (`whyslow_fixtures::messages`) produced to a real broker, as the
//! cluster's shippers would send them.

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::ClientConfig;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use whyslow_fixtures::messages::ScenarioMessage;

use super::broker::Broker;

/// The topic of one format's messages: `{prefix}.{format}`.
pub fn topic(prefix: &str, format: &str) -> String {
    format!("{prefix}.{format}")
}

/// Produces `messages` in order (one partition per topic, so their order is kept), each
/// with its key, headers and its content time as the Kafka timestamp. Returns the count
/// per topic.
pub fn produce_scenario(
    broker: &Broker,
    prefix: &str,
    messages: &[ScenarioMessage],
) -> BTreeMap<String, i64> {
    let mut produced: BTreeMap<String, i64> = BTreeMap::new();
    for m in messages {
        *produced.entry(topic(prefix, m.format)).or_default() += 0;
    }
    for t in produced.keys() {
        broker.create_topic(t, 1);
    }
    let p: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", broker.addr())
        .set("linger.ms", "20")
        .set("batch.num.messages", "5000")
        .set("message.max.bytes", "16000000")
        .set("enable.idempotence", "false")
        .create()
        .expect("producer");
    for m in messages {
        let t = topic(prefix, m.format);
        let mut headers = OwnedHeaders::new_with_capacity(m.headers.len());
        for (k, v) in &m.headers {
            headers = headers.insert(Header {
                key: k,
                value: Some(v.as_bytes()),
            });
        }
        let mut record = BaseRecord::<str, [u8]>::to(&t)
            .partition(0)
            .payload(&m.payload[..])
            .timestamp(m.time_ns.div_euclid(1_000_000))
            .headers(headers);
        if let Some(k) = &m.key {
            record = record.key(k.as_str());
        }
        loop {
            match p.send(record) {
                Ok(()) => break,
                Err((e, r)) => {
                    assert!(
                        matches!(
                            e.rdkafka_error_code(),
                            Some(rdkafka::types::RDKafkaErrorCode::QueueFull)
                        ),
                        "producing {}: {e}",
                        m.origin
                    );
                    record = r;
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
        *produced.get_mut(&t).expect("topic counted above") += 1;
    }
    p.flush(Duration::from_secs(120))
        .expect("all messages delivered");
    produced
}
