//! `whyslow stream`: a Kafka consumer-group member that turns topics into the same event
//! log that `whyslow ingest` writes, exactly once, and publishes incidents.

mod batch;
pub mod http;
pub mod incidents;
pub mod kafka_props;
pub mod options;
pub mod telemetry;
mod worker;

pub use batch::{Accepted, Message, MicroBatch};
pub use incidents::{CommitObserver, Committed};
pub use options::{OptionError, StreamOptions, TopicSpec, parse_duration};
pub use worker::{StreamSummary, run};

use whyslow_store::StoreError;

/// Why a worker stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    #[error("Kafka client error: {0}")]
    Kafka(#[source] rdkafka::error::KafkaError),
    #[error(
        "the broker at {brokers} stayed unreachable for longer than the retry budget of {budget:?} (last error: {last})"
    )]
    BrokerUnreachable {
        brokers: String,
        budget: std::time::Duration,
        last: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "the store stayed unwritable for longer than the retry budget of {budget:?} (last error: {last})"
    )]
    StoreUnreachable {
        budget: std::time::Duration,
        #[source]
        last: StoreError,
    },
    #[error("cannot serve metrics on {addr}: {source}")]
    MetricsEndpoint {
        addr: String,
        #[source]
        source: std::io::Error,
    },
}
