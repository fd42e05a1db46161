//! The JSON records of prometheus-kafka-adapter (one sample per message):
//! `{"timestamp":"2020-04-21T10:37:11Z","value":"9876543","name":"up","labels":{"__name__":"up",…}}`.
//! The value is a string (`"NaN"`, `"+Inf"` included); a number is accepted too.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{MapAccess, Visitor};

use super::text::{Sample, parse_value};
use whyslow_schemas::time;

#[derive(Deserialize)]
struct Record<'a> {
    #[serde(borrow)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow)]
    value: Option<Value<'a>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    labels: Labels<'a>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Value<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Number(f64),
}

#[derive(Default)]
struct Labels<'a>(Vec<(Cow<'a, str>, Cow<'a, str>)>);

impl<'de: 'a, 'a> Deserialize<'de> for Labels<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Labels<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of string labels")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                let mut v = Vec::with_capacity(m.size_hint().unwrap_or(8));
                while let Some((k, val)) = m.next_entry::<Cow<'a, str>, Cow<'a, str>>()? {
                    v.push((k, val));
                }
                Ok(Labels(v))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Labels(Vec::new()))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// Whether a line looks like a JSON object rather than an exposition-format sample
/// (a Prometheus 3 sample may start with `{"name"` too, but ends with its value).
pub fn looks_like_json(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('{') && t.ends_with('}')
}

/// Reads one record into `sample` (name, labels without `__name__`, value, timestamp).
pub fn parse_record(line: &str, sample: &mut Sample) -> Result<(), String> {
    let r: Record<'_> = serde_json::from_str(line)
        .map_err(|e| format!("not a prometheus-kafka-adapter record: {e}"))?;
    sample.clear();
    let name = r
        .name
        .as_deref()
        .or_else(|| {
            r.labels
                .0
                .iter()
                .find(|(k, _)| k == "__name__")
                .map(|(_, v)| v.as_ref())
        })
        .filter(|n| !n.is_empty())
        .ok_or("prometheus-kafka-adapter record without a metric name")?;
    sample.set_name(name);
    for (k, v) in r.labels.0.iter().filter(|(k, _)| k != "__name__") {
        sample.push_label(k, v);
    }
    sample.value = match r.value {
        Some(Value::Number(n)) => n,
        Some(Value::Text(t)) => {
            parse_value(t.trim()).ok_or_else(|| format!("unreadable value '{t}'"))?
        }
        None => return Err("prometheus-kafka-adapter record without a value".into()),
    };
    if let Some(ts) = r.timestamp {
        let ns = time::parse_rfc3339(&ts)
            .or_else(|_| time::parse_epoch_decimal(&ts))
            .map_err(|_| format!("unreadable timestamp '{ts}'"))?;
        sample.timestamp = Some(ns);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_adapter_record() {
        let mut s = Sample::default();
        let line = r#"{"timestamp":"1970-01-01T00:00:00Z","value":"9876543","name":"up","labels":{"__name__":"up","label1":"value1","label2":"value2"}}"#;
        assert!(looks_like_json(line));
        parse_record(line, &mut s).unwrap();
        assert_eq!(
            (s.name(), s.value, s.timestamp),
            ("up", 9_876_543.0, Some(0))
        );
        assert_eq!(
            s.labels().collect::<Vec<_>>(),
            vec![("label1", "value1"), ("label2", "value2")]
        );
        parse_record(
            r#"{"timestamp":"2020-04-21T10:37:11.5Z","value":"NaN","labels":{"__name__":"x"}}"#,
            &mut s,
        )
        .unwrap();
        assert!(s.value.is_nan());
        assert_eq!(s.name(), "x");
        assert!(parse_record(r#"{"value":"1"}"#, &mut s).is_err());
        assert!(parse_record(r#"{"name":"x","value":"one"}"#, &mut s).is_err());
        assert!(parse_record(r#"{"name":"x""#, &mut s).is_err());
    }
}
