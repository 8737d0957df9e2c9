//! How far a ratio measured over rounds can be trusted: the median of the per-round ratios,
//! their min–max, a bootstrap 90% interval of the median, and whether a target is met.
//!
//! A per-round ratio divides one round's value of ours by the same round's value of the other
//! library (both ran back to back, on the same server, under the same load), so the rounds
//! are paired. A target is met only when every round's ratio is on its right side and there
//! are at least [`MIN_ROUNDS`] of them: one lucky round, or a median that hides a bad one, is
//! not enough.
//!
//! Pure: no clock, no IO; the bootstrap's randomness comes from a seed.

/// The fewest rounds whose ratios can meet a target.
pub(crate) const MIN_ROUNDS: usize = 5;

/// The bootstrap's resamples.
const RESAMPLES: usize = 10_000;

/// The bootstrap's confidence level.
const LEVEL: f64 = 0.90;

/// The median, the min–max and the bootstrap 90% interval of per-round ratios.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RatioStats {
    /// The median of the per-round ratios (the upper one of an even count).
    pub median: f64,
    /// The lowest per-round ratio.
    pub min: f64,
    /// The highest per-round ratio.
    pub max: f64,
    /// The bootstrap 90% interval of the median (rounds resampled with replacement).
    pub boot: (f64, f64),
    /// The rounds with a finite ratio.
    pub rounds: usize,
}

impl RatioStats {
    /// The statistics of `ratios` (non-finite ones left out: a round without the value), or
    /// `None` when none is left. The bootstrap draws from `seed`, so the same ratios and seed
    /// give the same interval.
    pub(crate) fn of(ratios: &[f64], seed: u64) -> Option<RatioStats> {
        let finite: Vec<f64> = ratios.iter().copied().filter(|r| r.is_finite()).collect();
        let median = median(&finite)?;
        let min = finite.iter().copied().fold(f64::INFINITY, f64::min);
        let max = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let boot = bootstrap_median(&finite, LEVEL, RESAMPLES, seed)?;
        Some(RatioStats {
            median,
            min,
            max,
            boot,
            rounds: finite.len(),
        })
    }
}

/// The median of `values` (the upper one of an even count); `None` when empty.
pub(crate) fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied()
}

/// The percentile bootstrap interval at `level` (0.90: from the 5th to the 95th percentile)
/// of the median of `values`: `resamples` times, draw `values.len()` values with replacement
/// and take their median; the interval spans the middle `level` of those medians. `None` when
/// `values` is empty or `resamples` is 0.
pub(crate) fn bootstrap_median(
    values: &[f64],
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<(f64, f64)> {
    if values.is_empty() || resamples == 0 {
        return None;
    }
    let mut rng = SplitMix64(seed);
    let mut draw = vec![0.0; values.len()];
    let mut medians = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for slot in &mut draw {
            *slot = *values.get(rng.below(values.len()))?;
        }
        medians.push(median(&draw)?);
    }
    medians.sort_unstable_by(f64::total_cmp);
    let tail = (1.0 - level.clamp(0.0, 1.0)) / 2.0;
    let last = medians.len().saturating_sub(1);
    // Nearest rank on 0..=last; the float-to-index casts saturate and stay within it.
    let at = |q: f64| {
        medians
            .get(((q * last as f64).round() as usize).min(last))
            .copied()
    };
    Some((at(tail)?, at(1.0 - tail)?))
}

/// SplitMix64 (Steele, Lea and Flood): a tiny seeded generator, enough for resampling.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0; the modulo bias is far below what resampling notices).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Which side of a bar a ratio ours/theirs must be on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Bar {
    /// Ours at least this many times theirs (cycles/s).
    AtLeast(f64),
    /// Ours at most this many times theirs (p99, CPU, memory).
    AtMost(f64),
}

impl Bar {
    /// Whether `ratio` is on the right side of the bar.
    pub(crate) fn holds(self, ratio: f64) -> bool {
        match self {
            Bar::AtLeast(bar) => ratio >= bar,
            Bar::AtMost(bar) => ratio <= bar,
        }
    }

    /// `>= 1.5x`, `<= 1x`.
    pub(crate) fn describe(self) -> String {
        match self {
            Bar::AtLeast(bar) => format!(">= {bar}x"),
            Bar::AtMost(bar) => format!("<= {bar}x"),
        }
    }
}

/// Whether a target holds over the rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// At least [`MIN_ROUNDS`] rounds, and every round's ratio on the right side.
    Met,
    /// At least [`MIN_ROUNDS`] rounds, some on the wrong side; `all_wrong` when every one is.
    NotMet {
        /// No round's ratio on the right side.
        all_wrong: bool,
    },
    /// Fewer than [`MIN_ROUNDS`] rounds with a ratio: too few to say.
    TooFewRounds(usize),
}

impl Verdict {
    /// The verdict on `stats` (none: no round had the ratio) against `bar`.
    pub(crate) fn of(stats: Option<&RatioStats>, bar: Bar) -> Verdict {
        let Some(s) = stats else {
            return Verdict::TooFewRounds(0);
        };
        if s.rounds < MIN_ROUNDS {
            return Verdict::TooFewRounds(s.rounds);
        }
        // The interval's two ends: every round is within them.
        match (bar.holds(s.min), bar.holds(s.max)) {
            (true, true) => Verdict::Met,
            (false, false) => Verdict::NotMet { all_wrong: true },
            _ => Verdict::NotMet { all_wrong: false },
        }
    }

    /// What the report says.
    pub(crate) fn describe(self) -> String {
        match self {
            Verdict::Met => "met".to_owned(),
            Verdict::NotMet { all_wrong: true } => "NOT met".to_owned(),
            Verdict::NotMet { all_wrong: false } => "not met (rounds on both sides)".to_owned(),
            Verdict::TooFewRounds(n) => format!("not shown ({n} rounds < {MIN_ROUNDS})"),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn stats_give_the_median_and_the_spread_of_the_rounds() {
        let s = RatioStats::of(&[1.2, 0.9, f64::NAN, 1.5, 1.1, 1.0], 7).unwrap();
        assert_eq!((s.median, s.min, s.max, s.rounds), (1.1, 0.9, 1.5, 5));
        let (lo, hi) = s.boot;
        assert!(s.min <= lo && lo <= s.median && s.median <= hi && hi <= s.max);
        assert_eq!(RatioStats::of(&[f64::NAN], 7), None);
        assert_eq!(RatioStats::of(&[], 7), None);
    }

    #[test]
    fn the_bootstrap_is_deterministic_and_narrows_with_agreeing_rounds() {
        let v = [1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6];
        let a = bootstrap_median(&v, 0.9, 2000, 1).unwrap();
        assert_eq!(a, bootstrap_median(&v, 0.9, 2000, 1).unwrap());
        // The median of 7 resampled values rarely reaches the extremes.
        assert!(a.0 > 1.0 && a.1 < 1.6, "{a:?}");
        assert!(a.0 <= 1.3 && 1.3 <= a.1, "{a:?}");
        // Five rounds: the median of five draws is the lowest value more than 5% of the
        // time, so the 90% interval is the min–max.
        let five = [1.0, 1.1, 1.2, 1.3, 1.4];
        assert_eq!(bootstrap_median(&five, 0.9, 10_000, 9), Some((1.0, 1.4)));
        // One value: no spread at all.
        assert_eq!(bootstrap_median(&[2.0], 0.9, 100, 3), Some((2.0, 2.0)));
        // Identical rounds: no spread either.
        assert_eq!(bootstrap_median(&[1.5; 5], 0.9, 100, 3), Some((1.5, 1.5)));
        assert_eq!(bootstrap_median(&[], 0.9, 100, 3), None);
        assert_eq!(bootstrap_median(&v, 0.9, 0, 3), None);
        // A wider level gives an interval at least as wide.
        let wide = bootstrap_median(&v, 0.99, 2000, 1).unwrap();
        assert!(wide.0 <= a.0 && wide.1 >= a.1);
    }

    #[test]
    fn the_median_takes_the_upper_of_an_even_count() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(3.0));
        assert_eq!(median(&[]), None);
    }

    fn stats(ratios: &[f64]) -> Option<RatioStats> {
        RatioStats::of(ratios, 1)
    }

    #[test]
    fn a_target_is_met_only_when_every_round_of_five_or_more_is_on_its_side() {
        let at_least = Bar::AtLeast(1.5);
        let five = [1.6, 1.7, 1.5, 1.9, 1.55];
        assert_eq!(Verdict::of(stats(&five).as_ref(), at_least), Verdict::Met);
        // The median is past the bar, one round is not: not met.
        let one_low = [1.6, 1.7, 1.4, 1.9, 1.55];
        assert_eq!(
            Verdict::of(stats(&one_low).as_ref(), at_least),
            Verdict::NotMet { all_wrong: false }
        );
        assert_eq!(
            Verdict::of(stats(&[1.0; 6]).as_ref(), at_least),
            Verdict::NotMet { all_wrong: true }
        );
        // Four rounds, all well past the bar: too few to say.
        assert_eq!(
            Verdict::of(stats(&[2.0; 4]).as_ref(), at_least),
            Verdict::TooFewRounds(4)
        );
        // A round without the value does not count towards the five.
        let with_gap = [2.0, 2.0, f64::NAN, 2.0, 2.0];
        assert_eq!(
            Verdict::of(stats(&with_gap).as_ref(), at_least),
            Verdict::TooFewRounds(4)
        );
        assert_eq!(Verdict::of(None, at_least), Verdict::TooFewRounds(0));
        let at_most = Bar::AtMost(1.0);
        assert_eq!(
            Verdict::of(stats(&[0.8, 0.9, 1.0, 0.7, 0.95]).as_ref(), at_most),
            Verdict::Met
        );
        assert_eq!(
            Verdict::of(stats(&[0.8, 0.9, 1.01, 0.7, 0.95]).as_ref(), at_most),
            Verdict::NotMet { all_wrong: false }
        );
        assert_eq!(
            Verdict::TooFewRounds(3).describe(),
            "not shown (3 rounds < 5)"
        );
        assert_eq!(at_least.describe(), ">= 1.5x");
    }
}
