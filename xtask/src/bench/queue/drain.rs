//! The arithmetic of a drained queue, with no IO: the holds of every process merged into one
//! order, the hand-offs between them, and memory per waiter.

use super::lines::{Hold, Queued};
use crate::bench::histogram::Histogram;

/// A queue drained: the holds of every waiter, in the order they were taken.
///
/// A hand-off is the time from one holder's release call to the next holder's `lock()`
/// returning; the first runs from the bench's own release (the holder the queue formed
/// behind). With every holder releasing at once, the drain is the sum of the hand-offs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drain {
    /// Every hand-off in ns, in drain order (one per hold).
    pub handoffs: Vec<u64>,
    /// From the bench's release to the last hold's release call, in ns.
    pub drain_ns: u64,
    /// Holds taken before the hold ahead of them was released: none when the lock excluded.
    pub overlaps: usize,
}

impl Drain {
    /// Merges `holds` (from any number of processes) behind a first release at
    /// `released_ns`.
    pub fn of(released_ns: u64, mut holds: Vec<Hold>) -> Drain {
        holds.sort_unstable();
        let mut previous = released_ns;
        let mut overlaps = 0;
        let mut handoffs = Vec::with_capacity(holds.len());
        for hold in &holds {
            if hold.acquired_ns < previous {
                overlaps += 1;
            }
            handoffs.push(hold.acquired_ns.saturating_sub(previous));
            previous = hold.released_ns;
        }
        Drain {
            handoffs,
            drain_ns: previous.saturating_sub(released_ns),
            overlaps,
        }
    }

    /// The hand-offs' histogram.
    pub fn histogram(&self) -> Histogram {
        histogram(&self.handoffs)
    }

    /// The median hand-off of the first tenth of the drain (the longest queues behind) and
    /// of the last tenth (the shortest): how a hand-off's cost follows the queue's length.
    /// Both are the whole drain's median below ten hand-offs.
    pub fn first_and_last_tenth_p50(&self) -> (u64, u64) {
        let tenth = (self.handoffs.len() / 10).max(1);
        if self.handoffs.len() < 10 {
            let all = histogram(&self.handoffs).percentile(50);
            return (all, all);
        }
        let first = self.handoffs.get(..tenth).unwrap_or_default();
        let last = self
            .handoffs
            .get(self.handoffs.len() - tenth..)
            .unwrap_or_default();
        (
            histogram(first).percentile(50),
            histogram(last).percentile(50),
        )
    }
}

fn histogram(values: &[u64]) -> Histogram {
    let mut h = Histogram::new();
    for &v in values {
        h.record(v);
    }
    h
}

/// Memory per waiter in bytes: what the waiters added to the resident sets of the processes
/// they ran in, over the waiters (each process's growth from before its first waiter to all
/// of them queued, summed); `None` without waiters.
pub fn bytes_per_waiter(queued: &[Queued]) -> Option<f64> {
    let waiters: u64 = queued.iter().map(|q| q.waiters).sum();
    let growth: u64 = queued.iter().map(Queued::growth_kib).sum();
    (waiters > 0).then(|| growth as f64 * 1024.0 / waiters as f64)
}

/// How `total` waiters are spread over `processes`: as evenly as can be, the first ones
/// taking one more.
pub fn spread(total: usize, processes: usize) -> Vec<usize> {
    let processes = processes.max(1);
    (0..processes)
        .map(|p| total / processes + usize::from(p < total % processes))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn hold(acquired_ns: u64, released_ns: u64) -> Hold {
        Hold {
            acquired_ns,
            released_ns,
        }
    }

    #[test]
    fn hand_offs_run_from_each_release_to_the_next_acquire_across_processes() {
        // Two processes' holds, interleaved; the bench released at 100.
        let a = vec![hold(110, 111), hold(150, 152)];
        let b = vec![hold(130, 131), hold(170, 175)];
        let d = Drain::of(100, [b, a].concat());
        assert_eq!(d.handoffs, [10, 19, 19, 18]);
        assert_eq!(d.drain_ns, 75);
        assert_eq!(d.overlaps, 0);
        assert_eq!(d.histogram().count(), 4);
        assert_eq!(d.histogram().percentile(50), 18);
    }

    #[test]
    fn an_acquire_before_the_release_ahead_is_an_overlap() {
        let d = Drain::of(100, vec![hold(110, 120), hold(115, 130)]);
        assert_eq!((d.overlaps, d.handoffs.clone()), (1, vec![10, 0]));
        let early = Drain::of(100, vec![hold(90, 95)]);
        assert_eq!((early.overlaps, early.drain_ns), (1, 0));
        let none = Drain::of(100, vec![]);
        assert_eq!((none.handoffs.len(), none.drain_ns), (0, 0));
    }

    #[test]
    fn the_first_and_last_tenths_are_compared() {
        // 20 hand-offs: the first two take 50, the last two take 10.
        let mut t = 0;
        let mut holds = Vec::new();
        for i in 0..20 {
            t += if i < 2 {
                50
            } else if i >= 18 {
                10
            } else {
                30
            };
            holds.push(hold(t, t));
        }
        let d = Drain::of(0, holds);
        assert_eq!(d.first_and_last_tenth_p50(), (50, 10));
        let short = Drain::of(0, vec![hold(5, 5), hold(12, 12)]);
        assert_eq!(short.first_and_last_tenth_p50(), (5, 5));
    }

    #[test]
    fn memory_per_waiter_is_the_growth_over_the_waiters() {
        let q = |waiters, before, after| Queued {
            waiters,
            nodes: waiters,
            rss_before_kib: before,
            rss_kib: after,
        };
        assert_eq!(bytes_per_waiter(&[q(100, 1000, 1100)]), Some(1024.0));
        // Two processes; one shrank, which counts as no growth.
        assert_eq!(
            bytes_per_waiter(&[q(50, 1000, 1200), q(50, 1000, 900)]),
            Some(2048.0)
        );
        assert_eq!(bytes_per_waiter(&[]), None);
    }

    #[test]
    fn waiters_are_spread_evenly() {
        assert_eq!(spread(10, 4), [3, 3, 2, 2]);
        assert_eq!(spread(10_000, 4), [2500; 4]);
        assert_eq!(spread(3, 1), [3]);
        assert_eq!(spread(3, 0), [3]);
        assert_eq!(spread(2, 4), [1, 1, 0, 0]);
    }
}
