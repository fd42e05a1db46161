//! Query parameters: `--param NAME=VALUE` bound to `$NAME` placeholders as typed values,
//! never spliced into the SQL text.
//!
//! A value takes the type DataFusion infers for its placeholder (from the column it is
//! compared with: `time >= $from` makes `$from` a UTC timestamp, `node = $node` a
//! string). Where nothing is inferred, the value's own form decides: an integer is
//! `Int64`, a decimal number `Float64`, an RFC 3339 or relative time (`-2h`) a
//! `Timestamp(ns, UTC)`, anything else a string. Times accept what the CLI accepts
//! everywhere: RFC 3339, `now`, or relative (`-30m`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use arrow::datatypes::DataType;
use datafusion::common::ParamValues;
use datafusion::logical_expr::LogicalPlan;
use datafusion::scalar::ScalarValue;
use whyslow_schemas::tables::UTC;
use whyslow_schemas::time::{now_ns, parse_cli_time, parse_rfc3339};

use crate::error::QueryError;

/// Named parameter values as given on the command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params(BTreeMap<String, String>);

impl Params {
    /// No parameters.
    pub fn new() -> Self {
        Params::default()
    }

    /// Parses `NAME=VALUE` arguments (a leading `$` on NAME is allowed).
    pub fn parse<S: AsRef<str>>(args: impl IntoIterator<Item = S>) -> Result<Self, QueryError> {
        let mut p = Params::new();
        for a in args {
            let a = a.as_ref();
            let Some((name, value)) = a.split_once('=') else {
                return Err(QueryError::Usage(format!(
                    "--param '{a}' is not NAME=VALUE"
                )));
            };
            p.set(name, value)?;
        }
        Ok(p)
    }

    /// Sets one parameter; the name is letters, digits and `_` (a leading `$` is dropped).
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), QueryError> {
        let name = name.trim();
        let name = name.strip_prefix('$').unwrap_or(name);
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(QueryError::Usage(format!(
                "parameter name '{name}' must be letters, digits and _ (used as ${name})"
            )));
        }
        self.0.insert(name.to_string(), value.to_string());
        Ok(())
    }

    /// Whether no parameter was given.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value given for `name`.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// The parameter names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// Fails when a parameter is used by none of `plans`: a misspelt name would otherwise
    /// be silently ignored.
    pub(crate) fn check_all_used(&self, plans: &[LogicalPlan]) -> Result<(), QueryError> {
        let mut used = BTreeSet::new();
        for p in plans {
            for id in p.get_parameter_names()? {
                used.insert(id.trim_start_matches('$').to_string());
            }
        }
        match self.names().find(|n| !used.contains(*n)) {
            Some(n) => Err(QueryError::Usage(format!(
                "--param {n} is not used by the query (no ${n} in it)"
            ))),
            None => Ok(()),
        }
    }

    /// The typed values of every placeholder of `plan`.
    pub(crate) fn values_for(&self, plan: &LogicalPlan) -> Result<ParamValues, QueryError> {
        let mut placeholders: Vec<(String, Option<DataType>)> =
            plan.get_parameter_types()?.into_iter().collect();
        placeholders.sort_by(|a, b| a.0.cmp(&b.0));
        let missing: Vec<&str> = placeholders
            .iter()
            .map(|(id, _)| id.trim_start_matches('$'))
            .filter(|name| !self.0.contains_key(*name))
            .collect();
        if !missing.is_empty() {
            let uses: Vec<String> = missing.iter().map(|n| format!("${n}")).collect();
            let flags: Vec<String> = missing
                .iter()
                .map(|n| format!("--param {n}=VALUE"))
                .collect();
            return Err(QueryError::Usage(format!(
                "the query uses {} but no {} was given",
                uses.join(", "),
                flags.join(", ")
            )));
        }
        let mut values = HashMap::new();
        for (id, ty) in &placeholders {
            let name = id.trim_start_matches('$');
            let raw = self.0.get(name).map(String::as_str).unwrap_or_default();
            values.insert(name.to_string(), typed_value(name, raw, ty.as_ref())?);
        }
        Ok(ParamValues::from(values))
    }
}

fn utc_ns(ns: i64) -> ScalarValue {
    ScalarValue::TimestampNanosecond(Some(ns), Some(UTC.into()))
}

/// The value of parameter `name` for a placeholder of type `ty` (unknown: guessed).
pub fn typed_value(
    name: &str,
    raw: &str,
    ty: Option<&DataType>,
) -> Result<ScalarValue, QueryError> {
    let bad = |what: &str| QueryError::Usage(format!("--param {name}: '{raw}' is not {what}"));
    match ty {
        None => Ok(guess(raw)),
        Some(DataType::Null) => Ok(guess(raw)),
        Some(ty @ DataType::Timestamp(..)) => {
            let ns = parse_cli_time(raw, now_ns()).map_err(|_| {
                bad("a time (RFC 3339 like 2026-11-29T10:15:00Z, now, or relative like -2h)")
            })?;
            utc_ns(ns)
                .cast_to(ty)
                .map_err(|_| bad(&format!("a time that fits {ty}")))
        }
        Some(ty @ (DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)) => {
            ScalarValue::Utf8(Some(raw.to_string()))
                .cast_to(ty)
                .map_err(|_| bad(&format!("a {ty}")))
        }
        Some(ty) => ScalarValue::try_from_string(raw.trim().to_string(), ty)
            .map_err(|_| bad(&format!("a {ty}"))),
    }
}

/// The type a value's own form suggests.
fn guess(raw: &str) -> ScalarValue {
    let t = raw.trim();
    if let Ok(i) = t.parse::<i64>() {
        return ScalarValue::Int64(Some(i));
    }
    let numeric = !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || "+-.eE".contains(c));
    if numeric && let Ok(f) = t.parse::<f64>() {
        return ScalarValue::Float64(Some(f));
    }
    if let Ok(ns) = parse_rfc3339(t) {
        return utc_ns(ns);
    }
    if t.starts_with('-')
        && let Ok(ns) = parse_cli_time(t, now_ns())
    {
        return utc_ns(ns);
    }
    ScalarValue::Utf8(Some(raw.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::TimeUnit;

    #[test]
    fn parse_takes_name_value_pairs() {
        let p = Params::parse(["node=gpu-1", "$from=2026-11-29T10:00:00Z", "q=a=b"]).unwrap();
        assert_eq!(p.names().collect::<Vec<_>>(), ["from", "node", "q"]);
        assert_eq!(p.0["q"], "a=b");
        assert!(Params::parse(["nonsense"]).unwrap_err().is_usage());
        assert!(Params::parse(["bad name=1"]).unwrap_err().is_usage());
    }

    #[test]
    fn untyped_values_are_guessed_from_their_form() {
        assert_eq!(guess("42"), ScalarValue::Int64(Some(42)));
        assert_eq!(guess("-3"), ScalarValue::Int64(Some(-3)));
        assert_eq!(guess("0.5"), ScalarValue::Float64(Some(0.5)));
        assert_eq!(
            guess("2026-11-29T10:00:00Z"),
            utc_ns(1_795_946_400_000_000_000)
        );
        assert!(matches!(
            guess("-2h"),
            ScalarValue::TimestampNanosecond(Some(_), _)
        ));
        assert_eq!(guess("NaN"), ScalarValue::Utf8(Some("NaN".into())));
        assert_eq!(
            guess("gpu-node-1"),
            ScalarValue::Utf8(Some("gpu-node-1".into()))
        );
    }

    #[test]
    fn inferred_types_win_over_the_form() {
        let utf8 = typed_value("node", "17", Some(&DataType::Utf8)).unwrap();
        assert_eq!(utf8, ScalarValue::Utf8(Some("17".into())));
        let ts = DataType::Timestamp(TimeUnit::Nanosecond, Some(UTC.into()));
        assert_eq!(
            typed_value("from", "2026-11-29T10:00:00Z", Some(&ts)).unwrap(),
            utc_ns(1_795_946_400_000_000_000)
        );
        assert!(
            typed_value("from", "yesterday", Some(&ts))
                .unwrap_err()
                .is_usage()
        );
        assert_eq!(
            typed_value("r", "3", Some(&DataType::Int32)).unwrap(),
            ScalarValue::Int32(Some(3))
        );
        assert!(
            typed_value("r", "three", Some(&DataType::Int32))
                .unwrap_err()
                .is_usage()
        );
    }
}
