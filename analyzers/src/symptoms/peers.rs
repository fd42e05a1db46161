//! What each member of a group did against the others: the median (and spread and
//! maximum) of every value but one, for every value of the group at once and in linear
//! time, as the straggler detectors compare a rank or a GPU with its peers in one step or
//! bucket. A group of thousands of ranks costs no sort per rank.

/// The middle values of a group's levels (a bucket's GPUs, a step's ranks), so that the
/// median of each member's peers (every level but its own) is read in constant time:
/// leaving one level out moves the middle by one place at most, so the few values around
/// it and where the member's own level sits against them give that median. They are found
/// by selection in linear time: a group of thousands costs no sort.
pub(super) struct PeerMedians {
    /// How many levels the group has.
    n: usize,
    /// The rank (in ascending order) of `middle[0]`.
    first: usize,
    /// The levels of ranks `first ..`: those either median reads (at most four).
    middle: [f64; 4],
}

impl PeerMedians {
    /// The middle of `levels`; `scratch` is reused between groups.
    pub(super) fn new(levels: impl IntoIterator<Item = f64>, scratch: &mut Vec<f64>) -> Self {
        scratch.clear();
        scratch.extend(levels);
        let n = scratch.len();
        let mut out = PeerMedians {
            n,
            first: 0,
            middle: [0.0; 4],
        };
        if n == 0 {
            return out;
        }
        // The ranks read: the median of all n levels (n/2 - 1, n/2) and of the n - 1 left
        // when one is left out (around (n - 1)/2, each shifted one up at most).
        let first = ((n - 1) / 2).saturating_sub(1);
        let last = (n / 2 + 1).min(n - 1);
        let (_, at_first, above) = scratch.select_nth_unstable_by(first, f64::total_cmp);
        out.first = first;
        out.middle[0] = *at_first;
        // `last - first` <= 3, and `above` holds the n - 1 - first >= last - first levels
        // ranked after `first`.
        let more = last - first;
        if more > 0 {
            let (next, at_last, _) = above.select_nth_unstable_by(more - 1, f64::total_cmp);
            next.sort_unstable_by(f64::total_cmp);
            out.middle[1..more].copy_from_slice(next);
            out.middle[more] = *at_last;
        }
        out
    }

    /// The level of rank `k`; `k` is one `excluding` reads, inside `middle`.
    fn rank(&self, k: usize) -> f64 {
        self.middle[k - self.first]
    }

    /// The median of every level but `own` (a member's own level, one of those given to
    /// [`PeerMedians::new`]; `None`: the median of all): [`median`](super::stats::median)
    /// of them, to the bit.
    pub(super) fn excluding(&self, own: Option<f64>) -> Option<f64> {
        let n = self.n - usize::from(own.is_some());
        if n == 0 {
            return None;
        }
        // Rank k of the others is rank k of all, or rank k + 1 where the left-out level
        // ranks at or before k (levels that compare equal are the same bits: which of them
        // is left out makes no difference).
        let nth = |k: usize| match own {
            Some(v) if self.rank(k).total_cmp(&v).is_ge() => self.rank(k + 1),
            _ => self.rank(k),
        };
        Some(if n % 2 == 1 {
            nth(n / 2)
        } else {
            (nth(n / 2 - 1) + nth(n / 2)) / 2.0
        })
    }
}

/// What the others of a group did, as one of them sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Peers {
    /// [`median`](super::stats::median) of the others.
    pub median: f64,
    /// The largest of the others (a fold of `f64::max` from `f64::MIN`).
    pub max: f64,
    /// [`mad_sigma`](super::stats::mad_sigma) of the others.
    pub mad_sigma: f64,
}

/// For each of `values`, what all the others did ([`Peers`], to the bit); `None` for a
/// value without others. The median of the others takes at most three values (the one left
/// out ranks below, at or above the middle), and each gives one set of deviations whose
/// median without the one left out is read as the median is: linear in the values.
/// `scratch` is reused between groups.
pub(super) fn leave_one_out(values: &[f64], scratch: &mut Vec<f64>) -> Vec<Option<Peers>> {
    let n = values.len();
    if n < 2 {
        return vec![None; n];
    }
    let medians = PeerMedians::new(values.iter().copied(), scratch);
    // The largest of the others: of those before and of those after.
    let mut after = vec![f64::MIN; n + 1];
    for i in (0..n).rev() {
        after[i] = after[i + 1].max(values[i]);
    }
    let mut before = f64::MIN;
    // The deviations from each median of the others met so far (at most three).
    let mut spreads: Vec<(u64, PeerMedians)> = Vec::with_capacity(3);
    let mut out = Vec::with_capacity(n);
    for (i, &own) in values.iter().enumerate() {
        let max = before.max(after[i + 1]);
        before = before.max(own);
        let Some(median) = medians.excluding(Some(own)) else {
            out.push(None);
            continue;
        };
        let at = match spreads.iter().position(|(b, _)| *b == median.to_bits()) {
            Some(at) => at,
            None => {
                let devs = values.iter().map(|v| (v - median).abs());
                spreads.push((median.to_bits(), PeerMedians::new(devs, scratch)));
                spreads.len() - 1
            }
        };
        let mad = spreads[at].1.excluding(Some((own - median).abs()));
        out.push(mad.map(|d| Peers {
            median,
            max,
            mad_sigma: d * 1.4826,
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symptoms::stats::{mad_sigma, median};

    /// Every value of `values` but the `i`-th: the peers a reference computes from scratch.
    fn but<T: Copy>(values: &[T], i: usize) -> impl Iterator<Item = T> + '_ {
        values
            .iter()
            .enumerate()
            .filter(move |(j, _)| *j != i)
            .map(|(_, v)| *v)
    }

    /// Every GPU's peer median from [`PeerMedians`] is [`median`] of the others, to the bit.
    fn assert_peer_medians(levels: &[Option<f64>], scratch: &mut Vec<f64>) {
        let peers = PeerMedians::new(levels.iter().flatten().copied(), scratch);
        for (i, own) in levels.iter().enumerate() {
            let others: Vec<f64> = but(levels, i).flatten().collect();
            let (got, want) = (peers.excluding(*own), median(&others));
            assert_eq!(got, want, "{levels:?} without {i}");
            assert_eq!(
                got.map(f64::to_bits),
                want.map(f64::to_bits),
                "{levels:?} without {i}"
            );
        }
    }

    #[test]
    fn peer_medians_equal_the_median_of_the_others() {
        let levels = [
            Some(0.5),
            None,
            Some(0.9),
            Some(0.5),
            Some(0.1),
            Some(0.7),
            Some(0.3),
        ];
        for len in 0..=levels.len() {
            assert_peer_medians(&levels[..len], &mut Vec::new());
        }
    }

    #[test]
    fn peer_medians_equal_the_median_of_the_others_with_ties_and_gaps() {
        // Levels from a few values (many ties, -0.0 beside 0.0) and some GPUs without
        // one, every count up to 40, from the fixtures' fixed-seed generator.
        let values = [0.0, -0.0, 0.25, 0.5, 0.5, 0.75, 1.0, f64::MIN_POSITIVE];
        let mut rng = whyslow_fixtures::rng::Rng::new(7);
        let mut scratch = Vec::new();
        for len in 0..=40 {
            for _ in 0..8 {
                let levels: Vec<Option<f64>> = (0..len)
                    .map(|_| {
                        let r = rng.next_u64();
                        (!r.is_multiple_of(5)).then(|| values[(r >> 8) as usize % values.len()])
                    })
                    .collect();
                assert_peer_medians(&levels, &mut scratch);
            }
        }
    }

    /// [`leave_one_out`] is, for every value, [`median`], the maximum and [`mad_sigma`] of
    /// the others, to the bit (the maximum to the value: `f64::max` may give either zero).
    fn assert_leave_one_out(values: &[f64], scratch: &mut Vec<f64>) {
        let got = leave_one_out(values, scratch);
        assert_eq!(got.len(), values.len());
        for (i, got) in got.iter().enumerate() {
            let others: Vec<f64> = but(values, i).collect();
            let want = median(&others).map(|m| {
                let max = others.iter().copied().fold(f64::MIN, f64::max);
                (m, max, mad_sigma(&others).unwrap_or(f64::NAN))
            });
            match (got, want) {
                (None, None) => {}
                (Some(p), Some((m, max, mad))) => {
                    assert_eq!(p.median.to_bits(), m.to_bits(), "{values:?} without {i}");
                    assert_eq!(p.max, max, "{values:?} without {i}");
                    assert_eq!(
                        p.mad_sigma.to_bits(),
                        mad.to_bits(),
                        "{values:?} without {i}"
                    );
                }
                _ => panic!("{values:?} without {i}: {got:?} against {want:?}"),
            }
        }
    }

    #[test]
    fn leave_one_out_equals_the_statistics_of_the_others() {
        assert_leave_one_out(&[], &mut Vec::new());
        assert_leave_one_out(&[1.0], &mut Vec::new());
        assert_leave_one_out(&[1.0, 3.0], &mut Vec::new());
        assert_leave_one_out(&[0.9, 1.0, 1.1, 2.5, 1.0, 0.95], &mut Vec::new());
        // Compute seconds from a few values (many ties, -0.0 beside 0.0), every count up
        // to 40, from the fixtures' fixed-seed generator.
        let pick = [0.0, -0.0, 0.25, 0.5, 0.5, 0.75, 1.0, 1.9, f64::MIN_POSITIVE];
        let mut rng = whyslow_fixtures::rng::Rng::new(11);
        let mut scratch = Vec::new();
        for len in 0..=40 {
            for _ in 0..8 {
                let values: Vec<f64> = (0..len)
                    .map(|_| pick[(rng.next_u64() >> 8) as usize % pick.len()])
                    .collect();
                assert_leave_one_out(&values, &mut scratch);
            }
        }
    }
}
