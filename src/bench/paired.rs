//! The statistic the verdict rests on: per-round ratios of paired, interleaved timings,
//! their median, and an exact distribution-free confidence interval for that median.
//!
//! In round `i` the planned path and a rival both run (in random order, back to back),
//! so whatever the shared host did in that round slows both; the ratio
//! `planned_i / rival_i` cancels it. The interval is the sign-test (binomial order
//! statistic) interval for the median: with `n` ratios sorted, `[x_(k), x_(n+1-k)]` for
//! the largest `k` with `P(Binomial(n, 1/2) < k) <= alpha/2`, which covers the true
//! median with probability at least `1 - alpha` whatever the ratios' distribution (no
//! normality, no independence of the two paths' noise). Pure functions over `&[f64]`.

use serde::Serialize;

use super::stats::median;

/// Two-sided confidence level of every interval.
pub const CONFIDENCE: f64 = 0.95;
/// The fixed tie band: a planned path at most 3 % slower than a rival counts as tied.
/// Noise never widens it; noise only widens the interval, which can then no longer
/// fit inside the band.
pub const TIE_BAND: f64 = 0.03;
/// Fewest rounds for which a 95 % sign interval exists (`2 / 2^6 < 0.05`).
pub const MIN_ROUNDS: usize = 6;

/// A median with its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Interval {
    pub median: f64,
    pub low: f64,
    pub high: f64,
    /// How many values it summarises.
    pub n: usize,
}

impl Interval {
    /// The interval's width relative to its median.
    pub fn relative_width(&self) -> f64 {
        if self.median > 0.0 {
            (self.high - self.low) / self.median
        } else {
            f64::INFINITY
        }
    }
}

/// `P(Binomial(n, 1/2) <= j)`.
fn binomial_cdf_half(n: usize, j: usize) -> f64 {
    // Sum of C(n, i) / 2^n in f64; n stays small (rounds), so no overflow worry up to ~1000.
    let mut term = 0.5f64.powi(n as i32);
    let mut sum = 0.0;
    for i in 0..=j.min(n) {
        if i > 0 {
            term *= (n - i + 1) as f64 / i as f64;
        }
        sum += term;
    }
    sum
}

/// The 1-based order-statistic index `k` of the sign interval, `None` when `n` is too
/// small for any interval at `CONFIDENCE`.
pub fn sign_interval_rank(n: usize) -> Option<usize> {
    let alpha_half = (1.0 - CONFIDENCE) / 2.0;
    let mut k = 0;
    // P(B < k) = P(B <= k - 1) must stay at or under alpha/2.
    while k < n / 2 && binomial_cdf_half(n, k) <= alpha_half {
        k += 1;
    }
    (k >= 1).then_some(k)
}

/// The median of `values` with its exact sign-test interval. With too few values for
/// an interval the bounds are the extremes and the caller must treat it as undecided
/// (see [`judge`]: it needs [`MIN_ROUNDS`]). `None` for no values or a NaN.
pub fn median_interval(values: &[f64]) -> Option<Interval> {
    let m = median(values)?;
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let k = sign_interval_rank(n).unwrap_or(1);
    Some(Interval {
        median: m,
        low: sorted[k - 1],
        high: sorted[n - k],
        n,
    })
}

/// Per-round ratios `a_i / b_i` (pairs with a non-positive denominator are dropped).
pub fn ratios(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter()
        .zip(b)
        .filter(|(_, y)| **y > 0.0)
        .map(|(x, y)| x / y)
        .collect()
}

/// What one paired comparison says about the planned path against one rival.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Judgement {
    /// The whole interval of `planned / rival` is at or under `1 + TIE_BAND`.
    Holds,
    /// The whole interval is above `1 + TIE_BAND`: the rival is faster beyond the band.
    Beaten,
    /// The interval straddles the band's edge, or there are too few rounds.
    Undecided,
}

/// Judges a ratio interval (`planned / rival` time) against the fixed tie band.
pub fn judge(ci: &Interval) -> Judgement {
    let edge = 1.0 + TIE_BAND;
    if ci.n < MIN_ROUNDS {
        Judgement::Undecided
    } else if ci.high <= edge {
        Judgement::Holds
    } else if ci.low > edge {
        Judgement::Beaten
    } else {
        Judgement::Undecided
    }
}

/// Whether more rounds are worth running for this interval: it is undecided and still
/// wider than the tie band (a narrower one sits on the band's edge, where more rounds
/// barely help).
pub fn wants_more(ci: &Interval) -> bool {
    judge(ci) == Judgement::Undecided && (ci.n < MIN_ROUNDS || ci.relative_width() > TIE_BAND)
}

/// The most rounds worth advising: `--rounds` accepts up to 5000.
pub const MAX_ADVISED_ROUNDS: usize = 5000;

/// A median this close to the band's edge (relative) is on it: no count of rounds
/// separates the two paths from the band.
pub const ON_THE_EDGE: f64 = 0.002;

/// How many rounds an undecided interval would need to leave the tie band's edge at the
/// spread observed, or `None` when no count of rounds would (its median sits on the
/// edge, or it would take more than [`MAX_ADVISED_ROUNDS`]).
///
/// The side of the interval that crosses the edge (from the median to the high end when
/// the median is inside the band, to the low end when it is beyond) narrows as
/// `1 / sqrt(n)` for a sign interval over ratios of a fixed distribution; the estimate
/// is the `n` at which that side fits between the median and the edge.
pub fn rounds_to_settle(ci: &Interval) -> Option<usize> {
    if judge(ci) != Judgement::Undecided {
        return Some(ci.n);
    }
    if ci.n < MIN_ROUNDS {
        return Some(MIN_ROUNDS.max(2 * ci.n));
    }
    let edge = 1.0 + TIE_BAND;
    let gap = (ci.median - edge).abs();
    if gap <= ON_THE_EDGE * edge {
        return None;
    }
    let side = if ci.median <= edge {
        ci.high - ci.median
    } else {
        ci.median - ci.low
    };
    // The epsilon keeps an exact ratio (2.0000000000000004) from rounding up a round.
    let needed = (ci.n as f64 * (side / gap).powi(2) - 1e-9).ceil();
    (needed <= MAX_ADVISED_ROUNDS as f64).then(|| (needed as usize).max(ci.n + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::rng::Rng;

    #[test]
    fn sign_interval_ranks_match_the_binomial_table() {
        // Known 95 % ranks (e.g. Conover, Practical Nonparametric Statistics, table A3).
        assert_eq!(sign_interval_rank(5), None);
        assert_eq!(sign_interval_rank(6), Some(1));
        assert_eq!(sign_interval_rank(8), Some(1));
        assert_eq!(sign_interval_rank(9), Some(2));
        assert_eq!(sign_interval_rank(12), Some(3));
        assert_eq!(sign_interval_rank(20), Some(6));
        assert!((binomial_cdf_half(4, 4) - 1.0).abs() < 1e-12);
        assert!((binomial_cdf_half(6, 0) - 1.0 / 64.0).abs() < 1e-15);
    }

    #[test]
    fn interval_brackets_the_median() {
        let ci = median_interval(&[5.0, 1.0, 4.0, 2.0, 3.0, 6.0, 7.0, 8.0, 9.0]).unwrap();
        assert_eq!((ci.low, ci.median, ci.high, ci.n), (2.0, 5.0, 8.0, 9));
        assert!(median_interval(&[]).is_none());
    }

    /// Paired series: host factor `h_i` times each path's own time, with `jitter` of
    /// independent noise per measurement.
    fn paired(
        n: usize,
        planned: f64,
        rival: f64,
        host: impl Fn(usize) -> f64,
        jitter: f64,
    ) -> (Vec<f64>, Vec<f64>) {
        let mut rng = Rng::new(7);
        let mut a = Vec::new();
        let mut b = Vec::new();
        for i in 0..n {
            let h = host(i);
            a.push(planned * h * (1.0 + jitter * rng.normal() as f64));
            b.push(rival * h * (1.0 + jitter * rng.normal() as f64));
        }
        (a, b)
    }

    fn outcome(a: &[f64], b: &[f64]) -> Judgement {
        judge(&median_interval(&ratios(a, b)).unwrap())
    }

    #[test]
    fn drifting_host_cancels_in_the_ratio() {
        // The host slows by 3x over the run: the unpaired medians would overlap, the
        // ratios do not.
        let (a, b) = paired(12, 100.0, 60.0, |i| 1.0 + 0.2 * i as f64, 0.01);
        assert_eq!(outcome(&a, &b), Judgement::Beaten);
        let (a, b) = paired(12, 60.0, 100.0, |i| 1.0 + 0.2 * i as f64, 0.01);
        assert_eq!(outcome(&a, &b), Judgement::Holds);
    }

    #[test]
    fn bimodal_host_cancels_in_the_ratio() {
        // Bandwidth flips between ~28 and ~45 GB/s from round to round.
        let host = |i: usize| if i.is_multiple_of(3) { 1.6 } else { 1.0 };
        let (a, b) = paired(10, 50.0, 50.5, host, 0.005);
        assert_eq!(outcome(&a, &b), Judgement::Holds, "a 1 % gap is a tie");
        let (a, b) = paired(10, 62.0, 50.0, host, 0.005);
        assert_eq!(outcome(&a, &b), Judgement::Beaten);
    }

    #[test]
    fn one_outlier_round_changes_nothing() {
        // From 9 rounds on, the 95 % sign interval leaves out the extremes.
        let (mut a, b) = paired(12, 40.0, 48.0, |_| 1.0, 0.01);
        a[3] *= 10.0; // the planned path was descheduled once
        assert_eq!(outcome(&a, &b), Judgement::Holds);
        let (a, mut b) = paired(12, 62.0, 50.0, |_| 1.0, 0.01);
        b[5] *= 10.0; // and the rival once
        assert_eq!(outcome(&a, &b), Judgement::Beaten);
    }

    #[test]
    fn a_large_gap_under_heavy_noise_never_passes() {
        // 78 % slower with 30 % independent noise per measurement: beaten or undecided,
        // never a pass, at every round count and seed.
        for n in 2..20 {
            let (a, b) = paired(n, 111.0, 62.0, |i| 1.0 + (i % 4) as f64, 0.3);
            assert_ne!(outcome(&a, &b), Judgement::Holds, "n = {n}");
        }
        // Given rounds enough, the gap is found.
        let (a, b) = paired(40, 111.0, 62.0, |_| 1.0, 0.3);
        assert_eq!(outcome(&a, &b), Judgement::Beaten);
    }

    #[test]
    fn noise_makes_a_near_tie_undecided_not_a_pass() {
        // 2 % slower (inside the band) but 25 % noise: the interval cannot fit.
        let (a, b) = paired(8, 51.0, 50.0, |_| 1.0, 0.25);
        assert_eq!(outcome(&a, &b), Judgement::Undecided);
        let ci = median_interval(&ratios(&a, &b)).unwrap();
        assert!(wants_more(&ci));
    }

    fn ci(low: f64, median: f64, high: f64, n: usize) -> Interval {
        Interval {
            median,
            low,
            high,
            n,
        }
    }

    #[test]
    fn rounds_to_settle_scale_with_the_spread_and_stop_at_the_edge() {
        // Median 2 % under the edge at 1.03, the high end 4 % over the median: the side
        // must halve, which takes four times the rounds.
        assert_eq!(rounds_to_settle(&ci(0.98, 1.01, 1.05, 20)), Some(80));
        // Beyond the band: the low side must fit between the median and the edge.
        assert_eq!(rounds_to_settle(&ci(1.02, 1.05, 1.06, 10)), Some(23));
        // On the edge: no count of rounds separates the two from the band.
        assert_eq!(rounds_to_settle(&ci(1.00, 1.031, 1.06, 75)), None);
        // Far more than --rounds allows is the same as never.
        assert_eq!(rounds_to_settle(&ci(0.90, 1.02, 1.20, 75)), None);
        // Already decided, or too few rounds to say.
        assert_eq!(rounds_to_settle(&ci(0.90, 0.95, 1.0, 12)), Some(12));
        assert_eq!(rounds_to_settle(&ci(0.5, 1.0, 1.5, 3)), Some(MIN_ROUNDS));
        // Never fewer than one more round than were run.
        assert_eq!(rounds_to_settle(&ci(0.99, 1.0, 1.0301, 40)), Some(41));
    }

    #[test]
    fn too_few_rounds_are_undecided() {
        let ci = median_interval(&[0.5, 0.5, 0.5]).unwrap();
        assert_eq!(judge(&ci), Judgement::Undecided);
        assert!(wants_more(&ci));
        let ci = median_interval(&[0.5; 6]).unwrap();
        assert_eq!(judge(&ci), Judgement::Holds);
        assert!(!wants_more(&ci));
    }
}
