//! `epoch_ns(time)`, `epoch_us(time)` and `epoch_ms(time)`: a timestamp of any unit as an
//! integer count since the Unix epoch (DuckDB's functions of the same names), so that SQL
//! doing arithmetic on times never depends on the unit a column is stored in (µs).

use std::sync::Arc;

use arrow::array::{AsArray, Int64Array};
use arrow::compute::kernels::cast::cast;
use arrow::datatypes::{DataType, Int64Type, TimeUnit};
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};

/// One of the functions: the unit it counts in.
#[derive(Debug, PartialEq, Eq, Hash)]
struct EpochFunction {
    unit: TimeUnit,
    signature: Signature,
}

impl EpochFunction {
    fn new(unit: TimeUnit) -> Self {
        // Finest first: text coerces to the first signature it fits, and must keep its
        // fraction of a second.
        let any_timestamp = [
            TimeUnit::Nanosecond,
            TimeUnit::Microsecond,
            TimeUnit::Millisecond,
            TimeUnit::Second,
        ]
        .into_iter()
        .flat_map(|u| {
            [
                DataType::Timestamp(u, Some("UTC".into())),
                DataType::Timestamp(u, None),
            ]
        })
        .map(|t| TypeSignature::Exact(vec![t]))
        .collect();
        EpochFunction {
            unit,
            signature: Signature::one_of(any_timestamp, Volatility::Immutable),
        }
    }
}

/// Registers `epoch_ns`, `epoch_us` and `epoch_ms` on `ctx`.
pub fn register(ctx: &SessionContext) {
    for unit in [
        TimeUnit::Nanosecond,
        TimeUnit::Microsecond,
        TimeUnit::Millisecond,
    ] {
        ctx.register_udf(ScalarUDF::new_from_impl(EpochFunction::new(unit)));
    }
}

impl ScalarUDFImpl for EpochFunction {
    fn name(&self) -> &str {
        match self.unit {
            TimeUnit::Nanosecond => "epoch_ns",
            TimeUnit::Microsecond => "epoch_us",
            _ => "epoch_ms",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [arg] = &args.args[..] else {
            return Err(DataFusionError::Plan(format!(
                "{}() takes one timestamp",
                self.name()
            )));
        };
        let values = arg.to_array(args.number_rows)?;
        let DataType::Timestamp(from, _) = values.data_type() else {
            return Err(DataFusionError::Plan(format!(
                "{}() takes a timestamp, not {}",
                self.name(),
                values.data_type()
            )));
        };
        let (from, to) = (per_second(*from), per_second(self.unit));
        let raw = cast(&values, &DataType::Int64)?;
        // Finer units multiply (NULL past i64's range); coarser ones divide rounding
        // towards negative infinity, so a time before the epoch stays before its count.
        let counts: Int64Array = raw
            .as_primitive::<Int64Type>()
            .iter()
            .map(|v| {
                v.and_then(|v| {
                    if to >= from {
                        v.checked_mul(to / from)
                    } else {
                        Some(v.div_euclid(from / to))
                    }
                })
            })
            .collect();
        Ok(ColumnarValue::Array(Arc::new(counts)))
    }
}

/// Counts of `unit` in one second.
fn per_second(unit: TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => 1,
        TimeUnit::Millisecond => 1_000,
        TimeUnit::Microsecond => 1_000_000,
        TimeUnit::Nanosecond => 1_000_000_000,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn one_row(sql: &str) -> String {
        let ctx = SessionContext::new();
        register(&ctx);
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string()
    }

    #[tokio::test]
    async fn every_unit_counts_the_same_instant() {
        let got = one_row(
            "SELECT epoch_ns(t) AS ns, epoch_us(t) AS us, epoch_ms(t) AS ms, \
             epoch_ns(arrow_cast(t, 'Timestamp(Microsecond, Some(\"UTC\"))')) AS ns_of_us, \
             epoch_ns(arrow_cast(t, 'Timestamp(Second, None)')) AS ns_of_s \
             FROM (VALUES (arrow_cast(1795946400123456789, 'Timestamp(Nanosecond, Some(\"UTC\"))'))) v(t)",
        )
        .await;
        let want = "\
+---------------------+------------------+---------------+---------------------+---------------------+
| ns                  | us               | ms            | ns_of_us            | ns_of_s             |
+---------------------+------------------+---------------+---------------------+---------------------+
| 1795946400123456789 | 1795946400123456 | 1795946400123 | 1795946400123456000 | 1795946400000000000 |
+---------------------+------------------+---------------+---------------------+---------------------+";
        assert_eq!(got, want);
    }

    #[tokio::test]
    async fn before_the_epoch_rounds_down_and_null_stays_null() {
        let got = one_row(
            "SELECT epoch_ms(arrow_cast(-1500, 'Timestamp(Microsecond, None)')) AS ms, \
             epoch_ns(CAST(NULL AS TIMESTAMP)) AS n",
        )
        .await;
        let want = "\
+----+---+
| ms | n |
+----+---+
| -2 |   |
+----+---+";
        assert_eq!(got, want);
    }

    #[tokio::test]
    async fn a_number_is_refused_and_text_is_read_as_a_time() {
        let ctx = SessionContext::new();
        register(&ctx);
        let err = ctx.sql("SELECT epoch_ns(1.5)").await.unwrap_err();
        assert!(err.to_string().contains("'epoch_ns(Float64)'"), "{err}");
        let got = one_row("SELECT epoch_ms('2026-11-29T10:00:00.250Z') AS ms").await;
        assert!(got.contains("| 1795946400250 |"), "{got}");
    }
}
