//! librdkafka client properties from the command line (`-X key=value`, kcat's convention)
//! and from a properties file (`--kafka-config`), and the features the client was built with.

use std::path::Path;

use rdkafka::config::ClientConfig;

use super::OptionError;

/// The `builtin.features` a deployable worker needs: TLS, every SASL mechanism managed
/// Kafka services use (PLAIN, SCRAM, OAUTHBEARER with OIDC token retrieval) and the
/// compression codecs producers use.
pub const REQUIRED_FEATURES: &[&str] = &[
    "ssl",
    "sasl_plain",
    "sasl_scram",
    "sasl_oauthbearer",
    "oidc",
    "gzip",
    "snappy",
    "lz4",
    "zstd",
];

/// Parses one `key=value` property; the value is taken as it is (it may hold `=`).
pub fn parse_property(spec: &str) -> Result<(String, String), OptionError> {
    match spec.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => {
            Ok((key.trim().to_string(), value.to_string()))
        }
        _ => Err(OptionError::Property(spec.to_string())),
    }
}

/// Reads a librdkafka properties file: one `key=value` a line, blank lines and lines
/// starting with `#` or `!` skipped (the Java properties comments kcat's `-F` accepts).
pub fn read_properties_file(path: &Path) -> Result<Vec<(String, String)>, OptionError> {
    let text = std::fs::read_to_string(path).map_err(|source| OptionError::PropertiesFile {
        path: path.display().to_string(),
        source,
    })?;
    parse_properties(&text).map_err(|(line, text)| OptionError::PropertiesLine {
        path: path.display().to_string(),
        line,
        text,
    })
}

/// Parses a properties file's text; a bad line is returned with its 1-based number.
fn parse_properties(text: &str) -> Result<Vec<(String, String)>, (usize, String)> {
    let mut props = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let (key, value) = parse_property(line).map_err(|_| (i + 1, line.to_string()))?;
        props.push((key, value.trim_start().to_string()));
    }
    Ok(props)
}

/// The client's `builtin.features` (e.g. `gzip,snappy,ssl,sasl,...`).
pub fn builtin_features() -> Result<Vec<String>, rdkafka::error::KafkaError> {
    let native = ClientConfig::new().create_native_config()?;
    let features = native.get("builtin.features")?;
    Ok(features.split(',').map(|f| f.trim().to_string()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_from_flags() {
        assert_eq!(
            parse_property("sasl.mechanism=SCRAM-SHA-512").unwrap(),
            ("sasl.mechanism".into(), "SCRAM-SHA-512".into())
        );
        // A value may hold `=` (OAUTHBEARER extensions, base64 secrets).
        assert_eq!(
            parse_property("sasl.oauthbearer.extensions=a=1,b=2")
                .unwrap()
                .1,
            "a=1,b=2"
        );
        assert!(parse_property("novalue").is_err());
        assert!(parse_property("=x").is_err());
    }

    #[test]
    fn properties_file_skips_comments_and_names_bad_lines() {
        let text = "# managed Kafka\n\nsecurity.protocol=SASL_SSL\n! also a comment\nsasl.password = s=cret\n";
        assert_eq!(
            parse_properties(text).unwrap(),
            vec![
                ("security.protocol".into(), "SASL_SSL".into()),
                ("sasl.password".into(), "s=cret".into()),
            ]
        );
        assert_eq!(
            parse_properties("a=1\nbroken\n").unwrap_err(),
            (2, "broken".to_string())
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("client.properties");
        std::fs::write(&path, "a=1\nbroken\n").unwrap();
        let err = read_properties_file(&path).unwrap_err().to_string();
        assert!(err.contains("client.properties:2"), "{err}");
        assert!(read_properties_file(&dir.path().join("missing")).is_err());
    }

    /// The client is built with TLS, SASL (PLAIN, SCRAM, OAUTHBEARER/OIDC) and every
    /// compression codec: managed Kafka services and producers need them.
    #[test]
    fn client_has_the_features_managed_kafka_needs() {
        let features = builtin_features().unwrap();
        for f in REQUIRED_FEATURES {
            assert!(
                features.iter().any(|x| x == f),
                "missing {f} in {features:?}"
            );
        }
    }
}
