//! The time range a query's filters allow on a table's time column, used to skip whole
//! segments whose min/max time (from the store's manifest) lie outside it.

use datafusion::logical_expr::{Between, BinaryExpr, Expr, Operator};
use datafusion::scalar::ScalarValue;

/// An inclusive range of nanoseconds since the epoch; `None` ends are open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimeRange {
    /// Rows before this cannot match.
    pub lo: Option<i64>,
    /// Rows after this cannot match.
    pub hi: Option<i64>,
}

impl TimeRange {
    /// The range allowed by all `filters` (a conjunction) on `column`. Filters that are
    /// not simple comparisons of the column with a timestamp constant are ignored, which
    /// only widens the range: pruning stays safe.
    pub fn from_filters(column: &str, filters: &[Expr]) -> TimeRange {
        let mut r = TimeRange::default();
        for f in filters {
            r.narrow(column, f);
        }
        r
    }

    /// Whether a segment whose times lie in `[min, max]` may hold a matching row.
    pub fn overlaps(&self, min: Option<i64>, max: Option<i64>) -> bool {
        let after_lo = match (self.lo, max) {
            (Some(lo), Some(max)) => max >= lo,
            _ => true,
        };
        let before_hi = match (self.hi, min) {
            (Some(hi), Some(min)) => min <= hi,
            _ => true,
        };
        after_lo && before_hi
    }

    fn raise_lo(&mut self, v: i64) {
        self.lo = Some(self.lo.map_or(v, |lo| lo.max(v)));
    }

    fn lower_hi(&mut self, v: i64) {
        self.hi = Some(self.hi.map_or(v, |hi| hi.min(v)));
    }

    fn narrow(&mut self, column: &str, e: &Expr) {
        match e {
            Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::And,
                right,
            }) => {
                self.narrow(column, left);
                self.narrow(column, right);
            }
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
                if is_column(left, column)
                    && let Some(v) = timestamp_ns(right)
                {
                    self.apply(*op, v);
                } else if is_column(right, column)
                    && let Some(v) = timestamp_ns(left)
                    && let Some(op) = op.swap()
                {
                    self.apply(op, v);
                }
            }
            Expr::Between(Between {
                expr,
                negated: false,
                low,
                high,
            }) if is_column(expr, column) => {
                if let Some(v) = timestamp_ns(low) {
                    self.raise_lo(v);
                }
                if let Some(v) = timestamp_ns(high) {
                    self.lower_hi(v);
                }
            }
            _ => {}
        }
    }

    fn apply(&mut self, op: Operator, v: i64) {
        match op {
            Operator::Eq => {
                self.raise_lo(v);
                self.lower_hi(v);
            }
            Operator::Gt => self.raise_lo(v.saturating_add(1)),
            Operator::GtEq => self.raise_lo(v),
            Operator::Lt => self.lower_hi(v.saturating_sub(1)),
            Operator::LtEq => self.lower_hi(v),
            _ => {}
        }
    }
}

fn is_column(e: &Expr, column: &str) -> bool {
    matches!(e, Expr::Column(c) if c.name == column)
}

/// A timestamp constant in nanoseconds, whatever its unit.
fn timestamp_ns(e: &Expr) -> Option<i64> {
    let Expr::Literal(v, _) = e else { return None };
    match v {
        ScalarValue::TimestampNanosecond(Some(v), _) => Some(*v),
        ScalarValue::TimestampMicrosecond(Some(v), _) => Some(v.saturating_mul(1_000)),
        ScalarValue::TimestampMillisecond(Some(v), _) => Some(v.saturating_mul(1_000_000)),
        ScalarValue::TimestampSecond(Some(v), _) => Some(v.saturating_mul(1_000_000_000)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::{col, lit};

    fn ts(v: i64) -> Expr {
        lit(ScalarValue::TimestampNanosecond(
            Some(v),
            Some("UTC".into()),
        ))
    }

    #[test]
    fn comparisons_and_between_narrow_the_range() {
        let r =
            TimeRange::from_filters("time", &[col("time").gt_eq(ts(10)), col("time").lt(ts(20))]);
        assert_eq!(
            r,
            TimeRange {
                lo: Some(10),
                hi: Some(19)
            }
        );
        let r = TimeRange::from_filters(
            "time",
            &[ts(10).lt(col("time")).and(col("time").lt_eq(ts(30)))],
        );
        assert_eq!(
            r,
            TimeRange {
                lo: Some(11),
                hi: Some(30)
            }
        );
        let r = TimeRange::from_filters("time", &[col("time").between(ts(5), ts(7))]);
        assert_eq!(
            r,
            TimeRange {
                lo: Some(5),
                hi: Some(7)
            }
        );
        let secs = lit(ScalarValue::TimestampSecond(Some(2), None));
        assert_eq!(
            TimeRange::from_filters("time", &[col("time").eq(secs)]).lo,
            Some(2_000_000_000)
        );
    }

    #[test]
    fn other_filters_leave_the_range_open() {
        let r = TimeRange::from_filters(
            "time",
            &[
                col("ingest_time").gt(ts(10)),
                col("time").gt(ts(1)).or(col("time").lt(ts(0))),
                col("node").eq(lit("n1")),
                col("time").not_between(ts(1), ts(2)),
            ],
        );
        assert_eq!(r, TimeRange::default());
    }

    #[test]
    fn overlap_keeps_segments_without_statistics() {
        let r = TimeRange {
            lo: Some(10),
            hi: Some(20),
        };
        assert!(r.overlaps(Some(0), Some(10)));
        assert!(r.overlaps(Some(20), Some(30)));
        assert!(!r.overlaps(Some(0), Some(9)));
        assert!(!r.overlaps(Some(21), Some(30)));
        assert!(r.overlaps(None, None));
        assert!(TimeRange::default().overlaps(Some(0), Some(1)));
    }
}
