//! Settings of a Kafka ingest worker, parsed from `whyslow stream` flags.

use std::path::PathBuf;
use std::time::Duration;

use crate::decode::{Format, UnknownFormat};

/// A flag value that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    #[error("--topic '{0}' names no topic (expected NAME or NAME=FORMAT)")]
    EmptyTopic(String),
    #[error("--topic '{spec}': {source}")]
    Format { spec: String, source: UnknownFormat },
    #[error("unreadable duration '{0}' (expected e.g. 500ms, 1s, 5m)")]
    Duration(String),
    #[error("-X '{0}' is not a Kafka client property (expected KEY=VALUE)")]
    Property(String),
    #[error("cannot read the Kafka client properties file {path}: {reason}")]
    PropertiesFile { path: String, reason: String },
    #[error("{path}:{line}: '{text}' is not a Kafka client property (expected KEY=VALUE)")]
    PropertiesLine {
        path: String,
        line: usize,
        text: String,
    },
}

/// One topic to consume and how to decode it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicSpec {
    pub name: String,
    pub format: Format,
}

impl TopicSpec {
    /// Parses `NAME` or `NAME=FORMAT` (format `auto` when omitted).
    pub fn parse(spec: &str) -> Result<TopicSpec, OptionError> {
        let (name, format) = match spec.split_once('=') {
            Some((n, f)) => {
                let format = f.parse().map_err(|source| OptionError::Format {
                    spec: spec.to_string(),
                    source,
                })?;
                (n, format)
            }
            None => (spec, Format::Auto),
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(OptionError::EmptyTopic(spec.to_string()));
        }
        Ok(TopicSpec {
            name: name.to_string(),
            format,
        })
    }
}

/// Parses a duration such as `500ms`, `1s`, `2m30s`, `90min`, `1h` (the syntax of
/// [`crate::time::parse_duration_ns`], which relative times use too).
pub fn parse_duration(s: &str) -> Result<Duration, OptionError> {
    crate::time::parse_duration_ns(s)
        .and_then(|ns| u64::try_from(ns).ok())
        .map(Duration::from_nanos)
        .ok_or_else(|| OptionError::Duration(s.to_string()))
}

/// Everything a worker needs to run.
#[derive(Debug, Clone)]
pub struct StreamOptions {
    /// The store directory the worker writes into.
    pub store: PathBuf,
    /// Kafka bootstrap servers.
    pub brokers: String,
    /// The consumer group.
    pub group: String,
    /// Topics and their formats.
    pub topics: Vec<TopicSpec>,
    /// Flush a micro-batch at least this often.
    pub flush_interval: Duration,
    /// Flush a micro-batch when it holds this many rows.
    pub max_batch_rows: usize,
    /// Flush a micro-batch when its messages add up to this many bytes.
    pub max_batch_bytes: usize,
    /// Serve the worker's own metrics here (`None`: no endpoint).
    pub metrics_addr: Option<String>,
    /// Give up when the broker stays unreachable this long.
    pub retry_budget: Duration,
    /// librdkafka properties for the consumer and the incident producer (`-X`,
    /// `--kafka-config`): TLS, SASL, compression; applied after whyslow's own.
    pub kafka_config: Vec<(String, String)>,
}

impl StreamOptions {
    /// Options with the defaults of `contracts/cli.md` for the given broker, group and topics.
    pub fn new(store: PathBuf, brokers: &str, group: &str, topics: Vec<TopicSpec>) -> Self {
        StreamOptions {
            store,
            brokers: brokers.to_string(),
            group: group.to_string(),
            topics,
            flush_interval: Duration::from_secs(1),
            max_batch_rows: 100_000,
            max_batch_bytes: 64 * 1024 * 1024,
            metrics_addr: None,
            retry_budget: Duration::from_secs(300),
            kafka_config: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_specs() {
        assert_eq!(
            TopicSpec::parse("dcgm=prometheus").unwrap(),
            TopicSpec {
                name: "dcgm".into(),
                format: Format::Prometheus
            }
        );
        assert_eq!(TopicSpec::parse("mixed").unwrap().format, Format::Auto);
        assert!(matches!(
            TopicSpec::parse("=k8s"),
            Err(OptionError::EmptyTopic(_))
        ));
        assert!(matches!(
            TopicSpec::parse("t=xml"),
            Err(OptionError::Format { .. })
        ));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert!(parse_duration("soon").is_err());
    }
}
