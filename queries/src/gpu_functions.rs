//! SQL functions over GPU clock-throttle reason masks — `throttle_slowdown(mask)`,
//! `throttle_power(mask)`, `throttle_thermal(mask)` (booleans) and
//! `throttle_reasons(mask)` (bit names) — decoded by the one table of the bits the
//! decoders use ([`whyslow_schemas::nvidia::ThrottleReasons`]), so that no SQL
//! file lists bits of its own. A mask is a number (a sample's `value`) or text (`0x60`,
//! `96`: an event's `mask`); anything else is NULL.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, StringArray};
use arrow::compute::kernels::cast::cast;
use arrow::datatypes::{DataType, Float64Type};
use datafusion::common::Result;
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use whyslow_schemas::nvidia::ThrottleReasons;

/// What a function reads of a mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Field {
    /// Any bit that cuts clocks.
    Slowdown,
    /// A power bit.
    Power,
    /// A thermal bit (HW slowdown included).
    Thermal,
    /// The names of the bits set.
    Reasons,
}

impl Field {
    const ALL: [Field; 4] = [
        Field::Slowdown,
        Field::Power,
        Field::Thermal,
        Field::Reasons,
    ];

    fn name(self) -> &'static str {
        match self {
            Field::Slowdown => "throttle_slowdown",
            Field::Power => "throttle_power",
            Field::Thermal => "throttle_thermal",
            Field::Reasons => "throttle_reasons",
        }
    }

    fn flag(self, r: ThrottleReasons) -> bool {
        match self {
            Field::Slowdown => r.slowdown_bits() != 0,
            Field::Power => r.power(),
            Field::Thermal => r.thermal(),
            Field::Reasons => false,
        }
    }
}

/// One of the throttle functions.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ThrottleFunction {
    field: Field,
    signature: Signature,
}

/// Registers the throttle functions on `ctx`.
pub fn register(ctx: &SessionContext) {
    for field in Field::ALL {
        ctx.register_udf(ScalarUDF::new_from_impl(ThrottleFunction {
            field,
            signature: Signature::uniform(
                1,
                vec![
                    DataType::Int64,
                    DataType::Float64,
                    DataType::Utf8,
                    DataType::Utf8View,
                    DataType::LargeUtf8,
                ],
                Volatility::Immutable,
            ),
        }));
    }
}

/// The masks of an array of numbers or text; NULL where a value is none.
fn masks(values: &ArrayRef) -> Result<Vec<Option<ThrottleReasons>>> {
    Ok(match values.data_type() {
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => {
            let text = cast(values, &DataType::Utf8)?;
            text.as_string::<i32>()
                .iter()
                .map(|t| t.and_then(ThrottleReasons::parse))
                .collect()
        }
        _ => {
            let numbers = cast(values, &DataType::Float64)?;
            numbers
                .as_primitive::<Float64Type>()
                .iter()
                .map(|v| v.and_then(ThrottleReasons::from_value))
                .collect()
        }
    })
}

impl ScalarUDFImpl for ThrottleFunction {
    fn name(&self) -> &str {
        self.field.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.field {
            Field::Reasons => DataType::Utf8,
            _ => DataType::Boolean,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let values = match args.args.first() {
            Some(v) => v.to_array(args.number_rows)?,
            None => return Ok(ColumnarValue::Scalar(datafusion::scalar::ScalarValue::Null)),
        };
        let masks = masks(&values)?;
        let result: ArrayRef = match self.field {
            Field::Reasons => Arc::new(
                masks
                    .iter()
                    .map(|m| m.map(ThrottleReasons::names))
                    .collect::<StringArray>(),
            ),
            field => Arc::new(
                masks
                    .iter()
                    .map(|m| m.map(|r| field.flag(r)))
                    .collect::<BooleanArray>(),
            ),
        };
        debug_assert_eq!(result.len(), values.len());
        Ok(ColumnarValue::Array(result))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn masks_decode_from_numbers_and_text() {
        let ctx = SessionContext::new();
        register(&ctx);
        let sql = "SELECT m, throttle_slowdown(m) AS s, throttle_power(m) AS p, \
                   throttle_thermal(m) AS t, throttle_reasons(m) AS r FROM (VALUES \
                   (CAST(96.0 AS DOUBLE)), (4.0), (16.0), (1.0), (8.0), (2.5), (NULL)) v(m)";
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let text = arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string();
        let want = "\
+------+-------+-------+-------+-----------------------------------------+
| m    | s     | p     | t     | r                                       |
+------+-------+-------+-------+-----------------------------------------+
| 96.0 | true  | false | true  | sw_thermal_slowdown,hw_thermal_slowdown |
| 4.0  | true  | true  | false | sw_power_cap                            |
| 16.0 | false | false | false | sync_boost                              |
| 1.0  | false | false | false | gpu_idle                                |
| 8.0  | true  | false | true  | hw_slowdown                             |
| 2.5  |       |       |       |                                         |
|      |       |       |       |                                         |
+------+-------+-------+-------+-----------------------------------------+";
        assert_eq!(text, want);
        let sql = "SELECT throttle_power('0x84'), throttle_thermal('0x60'), \
                   throttle_power(CAST(132 AS BIGINT)), throttle_power('power')";
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let b = &batches[0];
        let flags: Vec<Option<bool>> = (0..4)
            .map(|i| {
                let c = b.column(i).as_boolean();
                (!c.is_null(0)).then(|| c.value(0))
            })
            .collect();
        assert_eq!(flags, [Some(true), Some(true), Some(true), None]);
    }
}
