//! The string functions whose result size the query chooses (`repeat`, `lpad`, `rpad`),
//! bounded by the session's memory limit: DataFusion's memory pool tracks sorts, joins
//! and aggregations, not the strings a scalar function builds, so `repeat('x', 2e9)`
//! would take gigabytes past any limit. Each is the built-in function, refused before it
//! runs when the result it would build is larger than the limit.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::compute::kernels::cast::cast;
use arrow::compute::kernels::length::length;
use arrow::datatypes::{DataType, FieldRef, Int64Type};
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::FunctionRegistry;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};

/// How many times a built text is held at once, at most, on its way out.
const COPIES: u128 = 4;

/// How the result size of a bounded function follows from its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Growth {
    /// `repeat(text, n)`: the text's bytes `n` times.
    Repeat,
    /// `lpad/rpad(text, n [, fill])`: `n` characters of up to 4 bytes each.
    Pad,
}

/// A built-in function refused when its result would pass `limit` bytes.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Bounded {
    inner: ScalarUDF,
    growth: Growth,
    limit: usize,
}

/// Replaces `repeat`, `lpad` and `rpad` of `ctx` by versions bounded by `limit` bytes.
pub fn register(ctx: &SessionContext, limit: usize) {
    for (name, growth) in [
        ("repeat", Growth::Repeat),
        ("lpad", Growth::Pad),
        ("rpad", Growth::Pad),
    ] {
        // Every function named here is one of DataFusion's default string functions.
        if let Ok(inner) = ctx.udf(name) {
            let bounded = Bounded {
                inner: inner.as_ref().clone(),
                growth,
                limit,
            };
            ctx.register_udf(ScalarUDF::new_from_impl(bounded));
        }
    }
}

/// One argument as an array of `rows` values (a scalar is one value used `rows` times:
/// returned with a weight of `rows`).
fn values(v: &ColumnarValue, rows: usize) -> Result<(ArrayRef, usize)> {
    match v {
        ColumnarValue::Array(a) => Ok((Arc::clone(a), 1)),
        ColumnarValue::Scalar(s) => Ok((s.to_array_of_size(1)?, rows)),
    }
}

/// Per row (weighted), a non-negative integer view of an argument: byte lengths of text,
/// or the value of a number; null counts as 0.
fn integers(v: &ColumnarValue, rows: usize, text: bool) -> Result<(Vec<i64>, usize)> {
    let (array, weight) = values(v, rows)?;
    let ints = if text {
        cast(&length(&array)?, &DataType::Int64)?
    } else {
        cast(&array, &DataType::Int64)?
    };
    let ints = ints.as_primitive::<Int64Type>();
    Ok((
        (0..ints.len())
            .map(|i| {
                if ints.is_null(i) {
                    0
                } else {
                    ints.value(i).max(0)
                }
            })
            .collect(),
        weight,
    ))
}

impl Bounded {
    /// The bytes the call would build, at most.
    fn result_bytes(&self, args: &ScalarFunctionArgs) -> Result<u128> {
        let rows = args.number_rows;
        let (Some(text), Some(count)) = (args.args.first(), args.args.get(1)) else {
            return Ok(0);
        };
        let (counts, count_weight) = integers(count, rows, false)?;
        Ok(match self.growth {
            Growth::Pad => {
                counts.iter().map(|&n| n as u128 * 4).sum::<u128>() * count_weight as u128
            }
            Growth::Repeat => {
                let (lens, len_weight) = integers(text, rows, true)?;
                let per_call: u128 = match (lens.len(), counts.len()) {
                    (1, _) => lens[0] as u128 * counts.iter().map(|&n| n as u128).sum::<u128>(),
                    (_, 1) => counts[0] as u128 * lens.iter().map(|&l| l as u128).sum::<u128>(),
                    _ => lens
                        .iter()
                        .zip(&counts)
                        .map(|(&l, &n)| l as u128 * n as u128)
                        .sum(),
                };
                // Two scalars stand for every row of the batch.
                let both_scalar = len_weight > 1 && count_weight > 1;
                per_call * if both_scalar { rows as u128 } else { 1 }
            }
        })
    }
}

impl ScalarUDFImpl for Bounded {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let bytes = self.result_bytes(&args)?;
        // The built text is copied again on its way out (result batches, formatting):
        // a quarter of the limit leaves room for those copies.
        if bytes > self.limit as u128 / COPIES {
            return Err(DataFusionError::ResourcesExhausted(format!(
                "{}() would build {bytes} bytes of text, over a quarter of the {} byte memory limit",
                self.inner.name(),
                self.limit
            )));
        }
        self.inner.invoke_with_args(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::SessionContext;

    async fn run(ctx: &SessionContext, sql: &str) -> Result<usize> {
        let batches = ctx.sql(sql).await?.collect().await?;
        Ok(batches.iter().map(|b| b.num_rows()).sum())
    }

    #[tokio::test]
    async fn text_builders_are_refused_past_the_limit_and_work_below_it() {
        let ctx = SessionContext::new();
        register(&ctx, 4 << 20);
        for sql in [
            "SELECT repeat('x', 2000000000)",
            "SELECT repeat('abc', CAST(v AS BIGINT) * 100000) FROM generate_series(1, 10) t(v)",
            "SELECT lpad('x', 2000000000)",
            "SELECT rpad(CAST(v AS VARCHAR), 1000000, 'é') FROM generate_series(1, 3) t(v)",
        ] {
            let e = run(&ctx, sql).await.expect_err(sql);
            assert!(
                e.to_string().contains("of the 4194304 byte memory limit"),
                "{sql}: {e}"
            );
        }
        for sql in [
            "SELECT repeat('x', 1000)",
            "SELECT repeat(CAST(v AS VARCHAR), 10) FROM generate_series(1, 1000) t(v)",
            "SELECT lpad('7', 5, '0'), rpad('a', 3)",
            "SELECT repeat(NULL, 5), repeat('x', NULL), repeat('x', -3)",
        ] {
            assert!(run(&ctx, sql).await.is_ok(), "{sql}");
        }
        let rows = ctx
            .sql("SELECT lpad('7', 3, '0') AS p")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let p = rows[0].column(0).as_string::<i32>().value(0).to_string();
        assert_eq!(p, "007");
    }
}
