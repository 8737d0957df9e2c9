//! How a library's lock stream came back after one fault, from the times its holds began
//! (pure: the numbers `bench failover` reports).
//!
//! - **To the next hold**: from the fault's start to the first hold that began after it.
//! - **To the old rate**: the rate before the fault is the holds that began in the
//!   [`BASELINE`] before it, per second; the stream is back once a one-second window
//!   starting after the fault holds at least [`RATE_SHARE`] of that. The time reported is
//!   from the fault's start to that window's start (windows start every [`STEP`]).
//!
//! A fault whose baseline saw no hold, or after which no hold came before `until`, is
//! reported as not recovered within the gap (`None`), never as fast.

use std::time::Duration;

/// How long before a fault its baseline rate is taken over.
pub const BASELINE: Duration = Duration::from_secs(5);
/// The share of the baseline rate that counts as recovered.
pub const RATE_SHARE: f64 = 0.8;
/// The window the rate is counted over after the fault.
pub const WINDOW: Duration = Duration::from_secs(1);
/// How far apart the windows start.
pub const STEP: Duration = Duration::from_millis(50);

/// One fault's recovery for one library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recovery {
    /// From the fault's start to the next hold's start.
    pub next_hold: Option<Duration>,
    /// From the fault's start to the start of the first window back at the old rate.
    pub old_rate: Option<Duration>,
    /// A leader kill: from the fault's start to a member answering as the leader again (the
    /// ensemble's own recovery, the same for every library), if probed.
    pub ensemble_back: Option<Duration>,
}

impl Recovery {
    /// From the ensemble back (a new leader) to the next hold: the clients' own part of a
    /// leader kill's delay.
    pub fn after_ensemble(&self) -> Option<Duration> {
        Some(self.next_hold?.saturating_sub(self.ensemble_back?))
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// How many of `starts` (sorted) lie in `[from, to)`.
fn count(starts: &[u64], from: u64, to: u64) -> usize {
    let lo = starts.partition_point(|&t| t < from);
    let hi = starts.partition_point(|&t| t < to);
    hi.saturating_sub(lo)
}

/// The recovery after a fault starting at `fault` (ns), looked for until `until` (ns), from
/// the library's hold start times `starts` (ns, sorted).
pub fn recovery(starts: &[u64], fault: u64, until: u64) -> Recovery {
    let after = starts.partition_point(|&t| t < fault);
    let next_hold = starts
        .get(after)
        .filter(|&&t| t < until)
        .map(|&t| Duration::from_nanos(t - fault));
    let baseline = count(starts, fault.saturating_sub(ns(BASELINE)), fault);
    let per_window = baseline as f64 * WINDOW.as_secs_f64() / BASELINE.as_secs_f64();
    let needed = (per_window * RATE_SHARE).ceil().max(1.0) as usize;
    let mut old_rate = None;
    if baseline > 0 {
        let mut at = fault;
        while at.saturating_add(ns(WINDOW)) <= until {
            if count(starts, at, at + ns(WINDOW)) >= needed {
                old_rate = Some(Duration::from_nanos(at - fault));
                break;
            }
            at += ns(STEP);
        }
    }
    Recovery {
        next_hold,
        old_rate,
        ensemble_back: None,
    }
}

/// The median and the worst of `values`; `None` values (not recovered) count as the worst.
/// `None` for no values.
pub fn median_and_worst(
    values: &[Option<Duration>],
) -> Option<(Option<Duration>, Option<Duration>)> {
    if values.is_empty() {
        return None;
    }
    // `None` sorts last: not recovered is slower than any time.
    let mut sorted: Vec<Option<Duration>> = values.to_vec();
    sorted.sort_by_key(|v| v.map_or((1, Duration::ZERO), |d| (0, d)));
    let median = sorted.get(sorted.len() / 2).copied().flatten();
    let worst = sorted.last().copied().flatten();
    Some((median, worst))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;
    const MS: u64 = 1_000_000;

    /// A hold every `every` ns in `[from, to)`.
    fn steady(from: u64, to: u64, every: u64) -> Vec<u64> {
        (0..)
            .map(|i| from + i * every)
            .take_while(|&t| t < to)
            .collect()
    }

    #[test]
    fn a_stream_that_stops_for_two_seconds_recovers_after_them() {
        // 20 holds a second, then nothing from the fault at 10 s until 12 s, then 20 again.
        let mut starts = steady(0, 10 * S, 50 * MS);
        starts.extend(steady(12 * S, 20 * S, 50 * MS));
        let r = recovery(&starts, 10 * S, 20 * S);
        assert_eq!(r.next_hold, Some(Duration::from_secs(2)));
        // A window needs 16 of the 20 a second: the first full one starts at 12 s (within a
        // step of it: windows start every 50 ms from the fault).
        let back = r.old_rate.unwrap();
        assert!(
            back >= Duration::from_millis(1800) && back <= Duration::from_secs(2),
            "{back:?}"
        );
    }

    #[test]
    fn an_unbroken_stream_is_back_at_once_and_a_dead_one_never() {
        let starts = steady(0, 20 * S, 50 * MS);
        let r = recovery(&starts, 10 * S, 20 * S);
        assert_eq!(r.next_hold, Some(Duration::ZERO));
        assert_eq!(r.old_rate, Some(Duration::ZERO));

        let dead = steady(0, 10 * S, 50 * MS);
        let r = recovery(&dead, 10 * S, 20 * S);
        assert_eq!(
            r,
            Recovery {
                next_hold: None,
                old_rate: None,
                ensemble_back: None,
            }
        );
        // Holds only after `until` do not count.
        let late = [S, 2 * S, 30 * S];
        assert_eq!(recovery(&late, 10 * S, 20 * S).next_hold, None);
        // No baseline: the rate is not judged.
        let r = recovery(&[11 * S, 12 * S], 10 * S, 20 * S);
        assert_eq!(r.next_hold, Some(Duration::from_secs(1)));
        assert_eq!(r.old_rate, None);
    }

    #[test]
    fn a_slower_stream_after_the_fault_is_not_back() {
        // 20 a second before, 10 a second after: never 16 in a window.
        let mut starts = steady(0, 10 * S, 50 * MS);
        starts.extend(steady(10 * S, 20 * S, 100 * MS));
        assert_eq!(recovery(&starts, 10 * S, 20 * S).old_rate, None);
    }

    #[test]
    fn medians_and_worsts_count_the_unrecovered_as_worst() {
        let d = Duration::from_millis;
        assert_eq!(median_and_worst(&[]), None);
        assert_eq!(
            median_and_worst(&[Some(d(3)), Some(d(1)), Some(d(2))]),
            Some((Some(d(2)), Some(d(3))))
        );
        assert_eq!(
            median_and_worst(&[Some(d(1)), None, Some(d(2))]),
            Some((Some(d(2)), None))
        );
    }
}
