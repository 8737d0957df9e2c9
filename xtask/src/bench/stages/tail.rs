//! Where the slow cycles' time goes: percentiles of each stage and of the whole cycle, the
//! stages of the slowest 1% against those of all cycles, the slowest cycles' times since the
//! start, and the tail second by second. Pure: it reads [`Cycle`]s.

use super::breakdown::{Cycle, Stage};

/// The percentiles of one series, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Spread {
    /// The median.
    pub p50: u64,
    /// The 99th percentile.
    pub p99: u64,
    /// The 99.9th percentile.
    pub p999: u64,
    /// The largest value.
    pub max: u64,
}

impl Spread {
    /// The spread of `values` (nearest rank); all zero when empty.
    pub fn of(mut values: Vec<u64>) -> Spread {
        values.sort_unstable();
        Spread {
            p50: rank(&values, 500),
            p99: rank(&values, 990),
            p999: rank(&values, 999),
            max: values.last().copied().unwrap_or(0),
        }
    }
}

/// The nearest-rank value at `per_mille` of the sorted `values`; 0 when empty.
fn rank(sorted: &[u64], per_mille: usize) -> u64 {
    let n = sorted.len();
    let rank = (n * per_mille.min(1000)).div_ceil(1000).max(1);
    sorted.get(rank - 1).copied().unwrap_or(0)
}

/// One stage across the cycles.
#[derive(Debug, Clone, PartialEq)]
pub struct StageRow {
    /// The stage.
    pub stage: Stage,
    /// Its percentiles over all cycles.
    pub all: Spread,
    /// Its median over the slowest 1% of cycles (by total).
    pub slow_p50: u64,
    /// Its mean over the slowest 1% minus its mean over all cycles, in nanoseconds (may be
    /// negative). The means add up to the total's, so these add up to the slow cycles'
    /// extra time.
    pub slow_extra_mean: f64,
}

/// A slow cycle: when it started and how long it took, with the stage that went furthest
/// past its own median.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slow {
    /// Its contender.
    pub contender: usize,
    /// When lock() was called, in nanoseconds since the run's start.
    pub at: u64,
    /// The whole cycle.
    pub total: u64,
    /// The stage with the largest excess over that stage's median over all cycles.
    pub worst: Stage,
    /// That excess, in nanoseconds.
    pub worst_excess: u64,
}

/// One second of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Second {
    /// Seconds since the start (cycles that started in `[s, s + 1)`).
    pub second: u64,
    /// Cycles started in it.
    pub cycles: usize,
    /// Their totals' percentiles.
    pub total: Spread,
}

/// Everything the report says about one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Cycles read.
    pub cycles: usize,
    /// Cycles in which the lock waited behind another holder.
    pub handed_over: usize,
    /// Each stage, in the cycle's order.
    pub stages: Vec<StageRow>,
    /// The whole cycle's percentiles.
    pub total: Spread,
    /// How many cycles are "the slowest 1%" (at least one).
    pub slow_count: usize,
    /// The slowest cycles' median total.
    pub slow_total_p50: u64,
    /// The slowest [`SLOWEST`] cycles, slowest first.
    pub slowest: Vec<Slow>,
    /// Second by second.
    pub seconds: Vec<Second>,
}

/// How many of the slowest cycles are listed with their times.
pub const SLOWEST: usize = 20;

/// The median of `values` (upper one of an even count); 0 when empty.
fn median(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or(0)
}

fn mean(values: impl Iterator<Item = u64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0u32), |(s, n), v| (s + v as f64, n + 1));
    if n == 0 { 0.0 } else { sum / f64::from(n) }
}

/// Summarizes `cycles`.
pub fn summarize(cycles: &[Cycle]) -> Summary {
    let mut by_total: Vec<&Cycle> = cycles.iter().collect();
    by_total.sort_by_key(|c| std::cmp::Reverse(c.stages.total()));
    let slow_count = cycles.len().div_ceil(100).max(1).min(cycles.len());
    let slow = by_total.get(..slow_count).unwrap_or(&[]);

    let medians: Vec<(Stage, u64)> = Stage::ALL
        .iter()
        .map(|&s| (s, median(cycles.iter().map(|c| c.stages.get(s)).collect())))
        .collect();
    let stages = Stage::ALL
        .iter()
        .map(|&stage| StageRow {
            stage,
            all: Spread::of(cycles.iter().map(|c| c.stages.get(stage)).collect()),
            slow_p50: median(slow.iter().map(|c| c.stages.get(stage)).collect()),
            slow_extra_mean: mean(slow.iter().map(|c| c.stages.get(stage)))
                - mean(cycles.iter().map(|c| c.stages.get(stage))),
        })
        .collect();

    let slowest = by_total
        .iter()
        .take(SLOWEST)
        .map(|c| {
            let (worst, worst_excess) = medians
                .iter()
                .map(|&(s, m)| (s, c.stages.get(s).saturating_sub(m)))
                .max_by_key(|&(_, excess)| excess)
                .unwrap_or((Stage::Call, 0));
            Slow {
                contender: c.contender,
                at: c.at,
                total: c.stages.total(),
                worst,
                worst_excess,
            }
        })
        .collect();

    let mut seconds: Vec<Second> = Vec::new();
    let mut by_second: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
    for c in cycles {
        by_second
            .entry(c.at / 1_000_000_000)
            .or_default()
            .push(c.stages.total());
    }
    for (second, totals) in by_second {
        seconds.push(Second {
            second,
            cycles: totals.len(),
            total: Spread::of(totals),
        });
    }

    Summary {
        cycles: cycles.len(),
        handed_over: cycles.iter().filter(|c| c.stages.handed_over).count(),
        stages,
        total: Spread::of(cycles.iter().map(|c| c.stages.total()).collect()),
        slow_count,
        slow_total_p50: median(slow.iter().map(|c| c.stages.total()).collect()),
        slowest,
        seconds,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::super::breakdown::{Event, Kind, Marks, breakdown};
    use super::*;

    /// A cycle at `at` ms whose create/children round trip takes `server` ns and whose
    /// wake-up after the reply takes `wake` ns; everything else 10 ns.
    fn cycle(at_ms: u64, server: u64, wake: u64) -> Cycle {
        let t = at_ms * 1_000_000;
        let reply = t + 20 + server;
        let held = reply + wake;
        let events = [
            Event {
                at: t + 10,
                kind: Kind::LockAttempt,
            },
            Event {
                at: t + 20,
                kind: Kind::Request { xid: 1 },
            },
            Event {
                at: reply,
                kind: Kind::Reply { xid: 1 },
            },
            Event {
                at: held,
                kind: Kind::LockHeld { handed_over: false },
            },
            Event {
                at: held + 20,
                kind: Kind::Request { xid: 2 },
            },
            Event {
                at: held + 30,
                kind: Kind::Reply { xid: 2 },
            },
        ];
        let marks = Marks {
            lock_called: t,
            lock_returned: held + 10,
            release_returned: held + 40,
        };
        Cycle {
            contender: 0,
            at: t,
            stages: breakdown(&marks, &events).unwrap(),
        }
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let s = Spread::of((1..=1000).rev().collect());
        assert_eq!((s.p50, s.p99, s.p999, s.max), (500, 990, 999, 1000));
        assert_eq!(Spread::of(vec![]), Spread::default());
        assert_eq!(Spread::of(vec![7]).p999, 7);
    }

    #[test]
    fn the_slowest_percent_points_at_the_stage_that_grew() {
        // 198 ordinary cycles; 2 (the slowest 1%) with a 5 ms wake-up, at 3 s and 7 s.
        let mut cycles: Vec<Cycle> = (0..198).map(|i| cycle(i * 40, 500_000, 1_000)).collect();
        cycles.push(cycle(3_000, 500_000, 5_000_000));
        cycles.push(cycle(7_000, 500_000, 5_000_000));
        let s = summarize(&cycles);
        assert_eq!((s.cycles, s.slow_count, s.handed_over), (200, 2, 0));
        let row = |st: Stage| s.stages.iter().find(|r| r.stage == st).unwrap().clone();
        assert_eq!(row(Stage::Machine).all.p50, 1_000);
        assert_eq!(row(Stage::Machine).slow_p50, 5_000_000);
        assert_eq!(row(Stage::Server).slow_p50, row(Stage::Server).all.p50);
        let extra: f64 = s.stages.iter().map(|r| r.slow_extra_mean).sum();
        let expected = s.slow_total_p50 as f64
            - cycles.iter().map(|c| c.stages.total() as f64).sum::<f64>() / 200.0;
        assert!((extra - expected).abs() < 1.0, "{extra} vs {expected}");
        assert_eq!(s.slowest.len(), SLOWEST);
        assert_eq!(s.slowest[0].worst, Stage::Machine);
        let mut times: Vec<u64> = s.slowest[..2].iter().map(|c| c.at).collect();
        times.sort_unstable();
        assert_eq!(times, [3_000_000_000, 7_000_000_000]);
        // Seconds 0..=7: 25 cycles each (23 in the last), plus the slow ones at 3 s and 7 s.
        assert_eq!(s.seconds.len(), 8);
        assert_eq!(s.seconds[3].cycles, 26);
        assert_eq!(s.seconds[3].total.max, cycles[198].stages.total());
        assert_eq!(s.seconds[7].cycles, 24);
    }

    #[test]
    fn no_cycles_summarize_to_nothing() {
        let s = summarize(&[]);
        assert_eq!((s.cycles, s.slow_count), (0, 0));
        assert!(s.slowest.is_empty() && s.seconds.is_empty());
    }
}
