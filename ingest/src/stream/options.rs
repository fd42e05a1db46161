//! Settings of a Kafka ingest worker, parsed from `whyslow stream` flags.

use std::path::PathBuf;
use std::time::Duration;

use crate::decode::{Format, UnknownFormat};

/// A flag value that could not be read (a usage error).
#[derive(Debug, thiserror::Error)]
pub enum OptionError {
    #[error("--topic '{0}' names no topic (expected NAME or NAME=FORMAT)")]
    EmptyTopic(String),
    #[error("--topic '{spec}': {source}")]
    Format { spec: String, source: UnknownFormat },
    #[error("unreadable duration '{0}' (expected e.g. 500ms, 1s, 5m)")]
    Duration(String),
    #[error("-X '{0}' is not a Kafka client property (expected KEY=VALUE)")]
    Property(String),
    #[error("cannot read the Kafka client properties file {path}: {source}")]
    PropertiesFile {
        path: String,
        #[source]
        source: std::io::Error,
    },
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
/// [`whyslow_schemas::time::parse_duration_ns`], which relative times use too).
pub fn parse_duration(s: &str) -> Result<Duration, OptionError> {
    whyslow_schemas::time::parse_duration_ns(s)
        .and_then(|ns| u64::try_from(ns).ok())
        .map(Duration::from_nanos)
        .ok_or_else(|| OptionError::Duration(s.to_string()))
}

/// Everything a worker needs to run. It is also the set of `whyslow stream` flags that
/// fill it (clap reads each from its flag or `WHYSLOW_*` variable, with the typed parsers
/// of this module), so flag, help text, default and field are defined once, here. The
/// comments on the fields are the flags' help; [`StreamOptions::new`] gives the same
/// defaults for library callers.
#[derive(Debug, Clone, clap::Args)]
pub struct StreamOptions {
    // The store directory the worker writes into: the global `--store`.
    #[arg(skip)]
    pub store: PathBuf,
    /// Kafka bootstrap servers, comma-separated.
    #[arg(long, env = "WHYSLOW_BROKERS", required = true)]
    pub brokers: String,
    /// The consumer group.
    #[arg(long, env = "WHYSLOW_GROUP", required = true)]
    pub group: String,
    /// A topic to consume, optionally with its format: NAME[=FORMAT]. Repeatable; in the
    /// environment, comma-separated.
    #[arg(
        long = "topic",
        env = "WHYSLOW_TOPICS",
        value_delimiter = ',',
        required = true,
        value_parser = TopicSpec::parse
    )]
    pub topics: Vec<TopicSpec>,
    /// Flush a micro-batch at least this often (e.g. 1s, 500ms).
    #[arg(long, env = "WHYSLOW_FLUSH_INTERVAL", default_value = "1s", value_parser = parse_duration)]
    pub flush_interval: Duration,
    /// Flush a micro-batch when it holds this many rows.
    #[arg(
        long,
        env = "WHYSLOW_MAX_BATCH_ROWS",
        default_value_t = DEFAULT_MAX_BATCH_ROWS,
        value_parser = parse_batch_rows
    )]
    pub max_batch_rows: usize,
    // Flush a micro-batch when its messages add up to this many bytes (no flag).
    #[arg(skip = DEFAULT_MAX_BATCH_BYTES)]
    pub max_batch_bytes: usize,
    /// Serve the worker's own Prometheus metrics here (`off`: nowhere).
    // `std::option::Option` spelled out: clap then takes the value parser's
    // `Option` (None for `off`) instead of treating the flag as optional.
    #[arg(
        long,
        env = "WHYSLOW_METRICS_ADDR",
        default_value = "127.0.0.1:9464",
        value_parser = parse_metrics_addr
    )]
    pub metrics_addr: std::option::Option<String>,
    /// Give up (exit 1) when the broker stays unreachable this long.
    #[arg(long, env = "WHYSLOW_RETRY_BUDGET", default_value = "5m", value_parser = parse_duration)]
    pub retry_budget: Duration,
    /// A librdkafka property for the consumer and the incident producer, KEY=VALUE (kcat's
    /// `-X`): TLS, SASL, compression. Repeatable; in the environment, `;`-separated.
    // Applied after whyslow's own settings; after [`StreamOptions::read_kafka_config_file`]
    // it also holds the file's properties, ahead of these.
    #[arg(
        short = 'X',
        value_name = "KEY=VALUE",
        env = "WHYSLOW_KAFKA_PROPERTIES",
        value_delimiter = ';',
        value_parser = super::kafka_props::parse_property
    )]
    pub kafka_config: Vec<(String, String)>,
    /// A librdkafka properties file (one KEY=VALUE a line, `#` comments), read before -X.
    #[arg(
        long = "kafka-config",
        value_name = "FILE",
        env = "WHYSLOW_KAFKA_CONFIG"
    )]
    pub kafka_config_file: Option<PathBuf>,
}

/// The default of `--max-batch-rows`.
pub const DEFAULT_MAX_BATCH_ROWS: usize = 100_000;

/// The most bytes of messages a micro-batch holds before it is flushed.
pub const DEFAULT_MAX_BATCH_BYTES: usize = 64 * 1024 * 1024;

/// `--max-batch-rows`: a count; 0 is taken as 1 (every message its own batch).
fn parse_batch_rows(s: &str) -> Result<usize, std::num::ParseIntError> {
    s.trim().parse::<usize>().map(|n| n.max(1))
}

/// `--metrics-addr`: an address, or `off` (also `none` or empty) for no endpoint.
fn parse_metrics_addr(s: &str) -> Result<Option<String>, std::convert::Infallible> {
    Ok(match s.trim() {
        "" | "off" | "none" => None,
        a => Some(a.to_string()),
    })
}

impl StreamOptions {
    /// Options with the flags' defaults for the given broker, group and topics (no
    /// metrics endpoint).
    pub fn new(store: PathBuf, brokers: &str, group: &str, topics: Vec<TopicSpec>) -> Self {
        StreamOptions {
            store,
            brokers: brokers.to_string(),
            group: group.to_string(),
            topics,
            flush_interval: Duration::from_secs(1),
            max_batch_rows: DEFAULT_MAX_BATCH_ROWS,
            max_batch_bytes: DEFAULT_MAX_BATCH_BYTES,
            metrics_addr: None,
            retry_budget: Duration::from_secs(300),
            kafka_config: Vec::new(),
            kafka_config_file: None,
        }
    }

    /// Reads the `--kafka-config` file, when one is named, into `kafka_config` ahead of
    /// the `-X` properties (so those win). Call it once before starting the worker.
    pub fn read_kafka_config_file(&mut self) -> Result<(), OptionError> {
        if let Some(path) = self.kafka_config_file.take() {
            let mut props = super::kafka_props::read_properties_file(&path)?;
            props.append(&mut self.kafka_config);
            self.kafka_config = props;
        }
        Ok(())
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

    /// The flags as `whyslow stream` flattens them.
    #[derive(clap::Parser)]
    struct Flags {
        #[command(flatten)]
        opts: StreamOptions,
    }

    fn flags(args: &[&str]) -> StreamOptions {
        use clap::Parser;
        let base = [
            "whyslow",
            "--brokers",
            "b:9092",
            "--group",
            "g",
            "--topic",
            "t",
        ];
        Flags::try_parse_from(base.iter().chain(args)).unwrap().opts
    }

    #[test]
    fn flags_fill_the_options_with_their_defaults() {
        let o = flags(&[]);
        let d = StreamOptions::new(PathBuf::new(), "b:9092", "g", vec![]);
        assert_eq!(o.topics, vec![TopicSpec::parse("t").unwrap()]);
        assert_eq!(
            (o.flush_interval, o.max_batch_rows, o.max_batch_bytes),
            (d.flush_interval, d.max_batch_rows, d.max_batch_bytes)
        );
        assert_eq!(o.retry_budget, d.retry_budget);
        assert_eq!(o.metrics_addr.as_deref(), Some("127.0.0.1:9464"));
        let o = flags(&["--metrics-addr", "off", "--max-batch-rows", "0"]);
        assert_eq!((o.metrics_addr, o.max_batch_rows), (None, 1));
    }

    #[test]
    fn the_properties_file_comes_before_x() {
        let dir = std::env::temp_dir().join(format!("whyslow-props-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("client.properties");
        std::fs::write(&file, "# managed\nsasl.mechanism=PLAIN\nclient.id=file\n").unwrap();
        let mut o = flags(&[
            "-X",
            "client.id=flag",
            "--kafka-config",
            file.to_str().unwrap(),
        ]);
        o.read_kafka_config_file().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let pairs: Vec<(&str, &str)> = o
            .kafka_config
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("sasl.mechanism", "PLAIN"),
                ("client.id", "file"),
                ("client.id", "flag")
            ]
        );
        assert!(o.kafka_config_file.is_none());
    }
}
