//! Incidents out to Kafka: each one produced to `--incidents-topic` as JSON (the report
//! contract's slowdown objects), keyed by its incident id.

use std::time::Duration;

use rdkafka::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::error::KafkaError;
use rdkafka::message::DeliveryResult;
use rdkafka::producer::{BaseRecord, Producer, ProducerContext, ThreadedProducer};
use tracing::warn;

/// One incident to publish: a key (the slowdown id, so consumers can keep the latest
/// revision per key) and its JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incident {
    pub key: String,
    pub json: String,
}

/// Logs deliveries that failed after librdkafka's own retries.
pub struct DeliveryLog;

impl ClientContext for DeliveryLog {}

impl ProducerContext for DeliveryLog {
    type DeliveryOpaque = ();
    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        if let Err((e, _)) = result {
            warn!("An incident could not be delivered to Kafka: {e}.");
        }
    }
}

/// Produces incidents to one topic.
pub struct IncidentPublisher {
    producer: ThreadedProducer<DeliveryLog>,
    topic: String,
}

impl IncidentPublisher {
    /// A producer for `topic` on `brokers`, with extra librdkafka settings.
    pub fn new(brokers: &str, topic: &str, extra: &[(String, String)]) -> Result<Self, KafkaError> {
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", brokers)
            .set("message.timeout.ms", "30000")
            .set("enable.idempotence", "false");
        for (k, v) in extra {
            // Consumer-only settings would make the producer refuse to start.
            if !k.starts_with("group.") && !k.starts_with("auto.") && !k.starts_with("enable.auto")
            {
                config.set(k, v);
            }
        }
        let producer = config.create_with_context(DeliveryLog)?;
        Ok(IncidentPublisher {
            producer,
            topic: topic.to_string(),
        })
    }

    /// Queues one incident; delivery happens in the background and failures are logged,
    /// never blocking ingest.
    pub fn publish(&self, incident: &Incident) {
        let record = BaseRecord::to(&self.topic)
            .key(&incident.key)
            .payload(&incident.json);
        if let Err((e, _)) = self.producer.send(record) {
            warn!("An incident could not be queued for Kafka: {e}.");
        }
    }

    /// Waits up to `timeout` for queued incidents to be delivered.
    pub fn flush(&self, timeout: Duration) {
        if let Err(e) = self.producer.flush(timeout) {
            warn!("Incidents still queued after {timeout:?}: {e}.");
        }
    }
}

impl Drop for IncidentPublisher {
    fn drop(&mut self) {
        self.flush(Duration::from_secs(10));
    }
}
