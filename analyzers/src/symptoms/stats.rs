//! Robust statistics and tests shared by the detectors: medians, MAD, Welch's t-test and
//! a binary-segmentation change-point search.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// The median of `xs` (NaN-free), or `None` when empty.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The arithmetic mean, or `None` when empty.
pub fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// The median absolute deviation scaled to estimate a normal standard deviation.
pub fn mad_sigma(xs: &[f64]) -> Option<f64> {
    let m = median(xs)?;
    let dev: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
    median(&dev).map(|d| d * 1.4826)
}

/// Mean and sample variance.
pub fn mean_var(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    if xs.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mean = xs.iter().sum::<f64>() / n;
    let var = if xs.len() > 1 {
        xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var)
}

/// Welch's two-sample t-test: the statistic and its two-sided p-value.
pub fn welch_t(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (ma, va) = mean_var(a);
    let (mb, vb) = mean_var(b);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let se2 = va / na + vb / nb;
    if se2 <= f64::EPSILON * (ma.abs() + mb.abs()).max(1e-12) {
        // No variance at all: any difference is certain, none is nothing.
        return Some(if (ma - mb).abs() > 1e-12 {
            (f64::INFINITY, 0.0)
        } else {
            (0.0, 1.0)
        });
    }
    let t = (mb - ma) / se2.sqrt();
    let df = se2.powi(2) / ((va / na).powi(2) / (na - 1.0) + (vb / nb).powi(2) / (nb - 1.0));
    let p = match StudentsT::new(0.0, 1.0, df.max(1.0)) {
        Ok(dist) => 2.0 * (1.0 - dist.cdf(t.abs())),
        Err(_) => 2.0 * (1.0 - Normal::standard().cdf(t.abs())),
    };
    Some((t, p.clamp(0.0, 1.0)))
}

/// The two-sided p-value of the Mann-Whitney U test (normal approximation with a tie
/// correction): a rank test that a few extreme values do not weaken.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> Option<f64> {
    let (n1, n2) = (a.len(), b.len());
    if n1 < 2 || n2 < 2 {
        return None;
    }
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    let mut rank_a = 0.0;
    let mut ties = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let r = (i + j) as f64 / 2.0 + 1.0;
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        rank_a += all[i..=j].iter().filter(|x| x.1).count() as f64 * r;
        i = j + 1;
    }
    let (n1f, n2f, nf) = (n1 as f64, n2 as f64, n as f64);
    let u = rank_a - n1f * (n1f + 1.0) / 2.0;
    let mean = n1f * n2f / 2.0;
    let var = n1f * n2f / 12.0 * ((nf + 1.0) - ties / (nf * (nf - 1.0)));
    if var <= 0.0 {
        return Some(1.0);
    }
    let z = (u - mean).abs() / var.sqrt();
    Some((2.0 * (1.0 - Normal::standard().cdf(z))).clamp(0.0, 1.0))
}

/// Whether two samples differ at `alpha` by Welch's t-test or, where outliers inflate the
/// variance, by the Mann-Whitney rank test.
fn differ(a: &[f64], b: &[f64], alpha: f64) -> Option<f64> {
    let (t, p) = welch_t(a, b)?;
    let p = p.min(mann_whitney_p(a, b).unwrap_or(1.0));
    (p < alpha).then_some(t)
}

/// A change point found by [`segment`]: the index where the second segment starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangePoint {
    pub index: usize,
    pub t: f64,
    pub p: f64,
}

/// The single most significant mean shift in `xs` (Welch's t over every split leaving at
/// least `min_seg` samples each side), if significant at `alpha` and shifting the mean by
/// at least `min_rel` of the left side's (significant by Welch's t or Mann-Whitney).
pub fn best_split(xs: &[f64], min_seg: usize, alpha: f64, min_rel: f64) -> Option<ChangePoint> {
    let n = xs.len();
    if n < 2 * min_seg || min_seg < 2 {
        return None;
    }
    // Prefix sums make every split O(1).
    let mut s = vec![0.0; n + 1];
    let mut s2 = vec![0.0; n + 1];
    for (i, x) in xs.iter().enumerate() {
        s[i + 1] = s[i] + x;
        s2[i + 1] = s2[i] + x * x;
    }
    let stat = |lo: usize, hi: usize| -> (f64, f64, f64) {
        let k = (hi - lo) as f64;
        let m = (s[hi] - s[lo]) / k;
        let v = ((s2[hi] - s2[lo]) - k * m * m).max(0.0) / (k - 1.0);
        (k, m, v)
    };
    let mut best: Option<(usize, f64)> = None;
    for i in min_seg..=(n - min_seg) {
        let (na, ma, va) = stat(0, i);
        let (nb, mb, vb) = stat(i, n);
        let se = (va / na + vb / nb)
            .sqrt()
            .max(1e-9 * (ma.abs() + mb.abs()).max(1e-12));
        let t = ((mb - ma) / se).abs();
        if best.is_none_or(|(_, bt)| t > bt) {
            best = Some((i, t));
        }
    }
    let (index, _) = best?;
    let (left, right) = xs.split_at(index);
    let (t, p) = welch_t(left, right)?;
    let p = p.min(mann_whitney_p(left, right).unwrap_or(1.0));
    // Means, not medians: a split whose right side holds a shift and a recovery has the
    // left's median but not its mean, and recursion then separates the two.
    let (ml, _) = mean_var(left);
    let (mr, _) = mean_var(right);
    let rel = if ml.abs() > 1e-12 {
        (mr - ml).abs() / ml.abs()
    } else {
        (mr - ml).abs()
    };
    (p < alpha && rel >= min_rel).then_some(ChangePoint { index, t, p })
}

/// The most significant bump in `xs`: a stretch `[i, j)` of at least `min_seg` samples,
/// with at least `min_seg` outside it, whose mean differs from the rest's (Welch's t), if
/// significant at `alpha` and shifted by at least `min_rel`. Finds the shift-and-recovery
/// that a single split misses when the bump sits in the middle. The stretches with the
/// [`BUMP_CANDIDATES`] largest t are tested in turn, largest first (the later ones of
/// three samples or more): the very largest is often the bump's two highest samples (a tiny
/// variance inflates t), too few for the test to pass where the whole bump does. Series
/// longer than 2000 samples are not searched (quadratic).
pub fn best_bump(
    xs: &[f64],
    min_seg: usize,
    alpha: f64,
    min_rel: f64,
) -> Option<(usize, usize, f64)> {
    let n = xs.len();
    if n > 2000 || n < 2 * min_seg || min_seg < 2 {
        return None;
    }
    let mut s = vec![0.0; n + 1];
    let mut s2 = vec![0.0; n + 1];
    for (i, x) in xs.iter().enumerate() {
        s[i + 1] = s[i] + x;
        s2[i + 1] = s2[i] + x * x;
    }
    // The candidates with the largest t, kept sorted (largest first).
    let mut best: Vec<(usize, usize, f64)> = Vec::with_capacity(BUMP_CANDIDATES + 1);
    for i in 0..=n - min_seg {
        for j in i + min_seg..=n {
            let k_in = (j - i) as f64;
            let k_out = (n - (j - i)) as f64;
            if (n - (j - i)) < min_seg {
                continue;
            }
            let m_in = (s[j] - s[i]) / k_in;
            let m_out = (s[n] - s[j] + s[i]) / k_out;
            let v_in = ((s2[j] - s2[i]) - k_in * m_in * m_in).max(0.0) / (k_in - 1.0).max(1.0);
            let v_out =
                ((s2[n] - s2[j] + s2[i]) - k_out * m_out * m_out).max(0.0) / (k_out - 1.0).max(1.0);
            let se = (v_in / k_in + v_out / k_out)
                .sqrt()
                .max(1e-9 * (m_in.abs() + m_out.abs()).max(1e-12));
            let t = ((m_in - m_out) / se).abs();
            if best.len() < BUMP_CANDIDATES || best.last().is_some_and(|b| t > b.2) {
                // Ties keep the earlier stretch first, as a strict `>` scan would.
                let at = best.partition_point(|b| b.2 >= t);
                best.insert(at, (i, j, t));
                best.truncate(BUMP_CANDIDATES);
            }
        }
    }
    // After the first, only stretches of three samples or more: two adjacent highest
    // samples of noise pass Mann-Whitney at 1e-2 in a short series, and testing many
    // stretches would find such a pair somewhere.
    best.into_iter().enumerate().find_map(|(k, (i, j, _))| {
        if k > 0 && j - i < 3 {
            return None;
        }
        let inside = &xs[i..j];
        let outside: Vec<f64> = xs[..i].iter().chain(&xs[j..]).copied().collect();
        let t = differ(&outside, inside, alpha)?;
        let (mo, _) = mean_var(&outside);
        let (mi, _) = mean_var(inside);
        let rel = if mo.abs() > 1e-12 {
            (mi - mo).abs() / mo.abs()
        } else {
            (mi - mo).abs()
        };
        (rel >= min_rel).then_some((i, j, t.abs()))
    })
}

/// How many of the stretches with the largest t [`best_bump`] tests.
pub const BUMP_CANDIDATES: usize = 16;

/// Segmentation: every change point of `xs`, in index order. Each segment is split at its
/// most significant single change ([`best_split`]) or around its most significant bump
/// ([`best_bump`]), whichever is stronger, until neither passes.
pub fn segment(xs: &[f64], min_seg: usize, alpha: f64, min_rel: f64) -> Vec<usize> {
    let mut cuts = Vec::new();
    let mut stack = vec![(0usize, xs.len())];
    while let Some((lo, hi)) = stack.pop() {
        if cuts.len() > 16 {
            break;
        }
        let part = &xs[lo..hi];
        let split = best_split(part, min_seg, alpha, min_rel);
        let bump = best_bump(part, min_seg, alpha, min_rel);
        match (split, bump) {
            (Some(sp), Some((i, j, t))) if t > sp.t.abs() && i > 0 && j < part.len() => {
                cuts.extend([lo + i, lo + j]);
                stack.extend([(lo, lo + i), (lo + i, lo + j), (lo + j, hi)]);
            }
            (None, Some((i, j, _))) if i > 0 && j < part.len() => {
                cuts.extend([lo + i, lo + j]);
                stack.extend([(lo, lo + i), (lo + i, lo + j), (lo + j, hi)]);
            }
            (Some(sp), _) => {
                let at = lo + sp.index;
                cuts.push(at);
                stack.push((lo, at));
                stack.push((at, hi));
            }
            _ => {}
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noisy(n: usize, mean: f64, amp: f64, seed: u64) -> Vec<f64> {
        // A small deterministic LCG: reproducible noise without a rand dependency.
        let mut x = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let u = (x >> 11) as f64 / (1u64 << 53) as f64;
                mean + amp * (u - 0.5)
            })
            .collect()
    }

    #[test]
    fn a_bump_is_found_where_its_two_highest_samples_alone_are_too_few_to_test() {
        // Seconds per step in five-minute buckets, a degraded network slowing the job for
        // four of them (a seed's variation in `network-degraded`). Its two highest buckets
        // have the largest t, but two samples are too few for the test; the whole bump
        // passes it.
        let xs = [
            0.435, 0.404, 0.434, 0.474, 0.404, 0.432, 0.436, 0.434, 0.468, 0.524, 0.615, 0.673,
            0.487, 0.468, 0.404, 0.463, 0.433, 0.434, 0.404, 0.467, 0.432, 0.403, 0.418,
        ];
        let (i, j, _) = best_bump(&xs, 2, 1e-2, 0.05).expect("the bump");
        assert!((8..=9).contains(&i) && (12..=14).contains(&j), "{i}..{j}");
        let cuts = segment(&xs, 2, 1e-2, 0.05);
        assert!(cuts.iter().any(|c| (8..=9).contains(c)), "{cuts:?}");
        // A level series has none.
        assert_eq!(best_bump(&[0.43; 23], 2, 1e-2, 0.05), None);
    }

    #[test]
    fn median_and_mad() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        let s = mad_sigma(&[1.0, 2.0, 3.0, 4.0, 100.0]).unwrap();
        assert!((s - 1.4826).abs() < 1e-9, "MAD ignores the outlier: {s}");
    }

    #[test]
    fn welch_separates_shifted_samples_and_not_equal_ones() {
        let a = noisy(50, 2.0, 0.2, 1);
        let b = noisy(50, 2.5, 0.2, 2);
        let (_, p) = welch_t(&a, &b).unwrap();
        assert!(p < 1e-10, "p = {p}");
        let c = noisy(50, 2.0, 0.2, 3);
        let (_, p) = welch_t(&a, &c).unwrap();
        assert!(p > 0.01, "p = {p}");
    }

    #[test]
    fn mann_whitney_sees_a_shift_that_outliers_hide_from_welch() {
        let base = noisy(9, 2.0, 0.02, 11);
        let bumpy = [3.7, 9.4, 2.8, 3.1, 4.8, 4.6, 3.3, 10.8];
        let p = mann_whitney_p(&base, &bumpy).unwrap();
        assert!(p < 1e-3, "p = {p}");
        let same = noisy(9, 2.0, 0.02, 12);
        assert!(mann_whitney_p(&base, &same).unwrap() > 0.05);
    }

    #[test]
    fn segmentation_finds_the_shift_and_only_it() {
        let mut xs = noisy(120, 2.0, 0.2, 5);
        xs.extend(noisy(80, 2.6, 0.2, 6));
        let cuts = segment(&xs, 10, 1e-6, 0.1);
        assert_eq!(cuts.len(), 1, "{cuts:?}");
        assert!((118..=122).contains(&cuts[0]), "{cuts:?}");
        let flat = noisy(300, 2.0, 0.2, 7);
        assert!(segment(&flat, 10, 1e-6, 0.1).is_empty());
    }

    #[test]
    fn segmentation_finds_a_regression_that_recovers() {
        let mut xs = noisy(100, 2.0, 0.1, 8);
        xs.extend(noisy(60, 3.0, 0.1, 9));
        xs.extend(noisy(100, 2.0, 0.1, 10));
        let cuts = segment(&xs, 10, 1e-6, 0.1);
        assert_eq!(cuts.len(), 2, "{cuts:?}");
    }
}
