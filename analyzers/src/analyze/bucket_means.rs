//! Means per time bucket, folded from samples as they stream: what a GPU's activity
//! series needs, held as one entry per bucket instead of one per sample or per group of
//! a hash aggregation. Sums are of millionths as integers, so that the same samples give
//! the same bits in any order and folds of parts merge exactly.

use super::utilization::millionths;

/// The samples of one series, folded into per-bucket sums and counts.
#[derive(Debug, Clone, Default)]
pub struct BucketMeans {
    /// `(bucket start, sum of millionths, count)`, in the order buckets were first met
    /// (24 bytes each: the sums saturate at ±9.2e12, as the utilization's do);
    /// a bucket met again after others (samples out of time order, or another fold
    /// merged) gets a second entry, merged by [`BucketMeans::into_points`].
    buckets: Vec<(i64, i64, u32)>,
}

impl BucketMeans {
    /// Adds a sample at `time_ns` to the bucket of `width_ns` that holds it (buckets start
    /// at multiples of the width since the epoch, as `date_bin` with its default origin).
    /// A value too large for millionths (beyond ±9.2e12) counts as missing.
    pub fn push(&mut self, time_ns: i64, width_ns: i64, value: f64) {
        let Some(m) = millionths(value) else {
            return;
        };
        let bucket = time_ns.div_euclid(width_ns) * width_ns;
        match self.buckets.last_mut() {
            Some((b, sum, n)) if *b == bucket => {
                *sum = sum.saturating_add(m);
                *n += 1;
            }
            _ => self.buckets.push((bucket, m, 1)),
        }
    }

    /// About how many bytes the buckets hold.
    pub fn approx_bytes(&self) -> usize {
        self.buckets.capacity() * std::mem::size_of::<(i64, i64, u32)>()
    }

    /// Adds another fold's samples.
    pub fn merge(&mut self, other: &BucketMeans) {
        self.buckets.extend_from_slice(&other.buckets);
    }

    /// `(bucket start, mean)` per bucket, in time order.
    pub fn into_points(mut self) -> Vec<(i64, f64)> {
        self.buckets.sort_by_key(|b| b.0);
        let mut out: Vec<(i64, i64, u32)> = Vec::with_capacity(self.buckets.len());
        for (b, sum, n) in self.buckets {
            match out.last_mut() {
                Some((ob, osum, on)) if *ob == b => {
                    *osum = osum.saturating_add(sum);
                    *on += n;
                }
                _ => out.push((b, sum, n)),
            }
        }
        out.into_iter()
            // (1e6 × a count is exact in f64: one rounding.)
            .map(|(b, sum, n)| (b, sum as f64 / (1e6 * f64::from(n))))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000_000_000;

    #[test]
    fn samples_fold_into_the_mean_of_their_bucket_in_time_order() {
        let mut m = BucketMeans::default();
        // Two samples of minute 5, one of minute 6, then a late one of minute 5 and one
        // before the epoch (buckets floor towards minus infinity).
        m.push(5 * MIN + 10_000_000_000, MIN, 0.8);
        m.push(5 * MIN + 40_000_000_000, MIN, 0.6);
        m.push(6 * MIN + 20_000_000_000, MIN, 0.5);
        m.push(5 * MIN, MIN, 0.4);
        m.push(-1, MIN, 1.0);
        let points = m.into_points();
        assert_eq!(points.len(), 3);
        assert_eq!(points[0], (-MIN, 1.0));
        assert_eq!(points[1].0, 5 * MIN);
        assert!((points[1].1 - 0.6).abs() < 1e-12, "{points:?}");
        assert_eq!(points[2], (6 * MIN, 0.5));
        assert!(BucketMeans::default().into_points().is_empty());
    }
}
