//! The checkers: what each recipe promises about holds that overlap in time ([`Rule`]), and
//! the one sweep that finds the holds breaking it ([`check`]). Pure: the harness feeds it the
//! holds both sides recorded.

use std::collections::BTreeMap;

use super::holds::{Hold, Mode};
use crate::recipe::Recipe;

/// What may be held at once, per thing held (`on`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// One holder at a time (a mutex; each member of a multi-lock). Mode `x`.
    Exclusive,
    /// Any number of readers, or one writer; a writer's own read (a downgrade, or a read
    /// taken while writing) may overlap its write. Modes `r` and `w`.
    ReadersOrOneWriter,
    /// At most this many leases. Mode `lease`.
    Leases(u32),
}

impl Rule {
    /// The rule of `recipe` (`leases` for the semaphore).
    pub fn of(recipe: Recipe, leases: u32) -> Rule {
        match recipe {
            Recipe::Mutex | Recipe::Multilock => Rule::Exclusive,
            Recipe::Rwlock => Rule::ReadersOrOneWriter,
            Recipe::Semaphore => Rule::Leases(leases),
            Recipe::SemaphoreMutex => Rule::Leases(1),
        }
    }

    fn allows(self, mode: Mode) -> bool {
        match self {
            Rule::Exclusive => mode == Mode::Exclusive,
            Rule::ReadersOrOneWriter => matches!(mode, Mode::Read | Mode::Write),
            Rule::Leases(_) => mode == Mode::Lease,
        }
    }

    /// Whether `a` and `b`, on the same thing, may be held at the same time (leases are
    /// counted, not paired).
    fn compatible(self, a: &Hold, b: &Hold) -> bool {
        match self {
            Rule::Exclusive => false,
            Rule::ReadersOrOneWriter => {
                (a.mode == Mode::Read && b.mode == Mode::Read) || (a.who == b.who)
            }
            Rule::Leases(_) => true,
        }
    }
}

/// How many conflicts a [`Verdict`] keeps for the report.
const KEPT: usize = 10;

/// Two holds held together against the rule (for leases: the hold that went past N, and one
/// of those already held).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The hold that began while the other was held.
    pub later: Hold,
    /// One hold it overlapped.
    pub earlier: Hold,
    /// How many were held when it began (for leases).
    pub held: usize,
}

/// What [`check`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Holds checked.
    pub holds: usize,
    /// Holds that began while the rule forbade it.
    pub violations: u64,
    /// The first conflicts.
    pub conflicts: Vec<Conflict>,
    /// Reads that began while their own client held the write lock (downgrades).
    pub downgrades: u64,
    /// The most held at once of any one thing.
    pub peak: usize,
}

/// Checks `holds` against `rule`, thing by thing.
///
/// # Errors
/// A hold whose mode the rule does not know (a worker for another recipe).
pub fn check(rule: Rule, holds: &[Hold]) -> Result<Verdict, String> {
    if let Some(bad) = holds.iter().find(|h| !rule.allows(h.mode)) {
        return Err(format!("a hold the rule {rule:?} does not know: {bad}"));
    }
    let mut by_thing: BTreeMap<&str, Vec<&Hold>> = BTreeMap::new();
    for hold in holds {
        by_thing.entry(&hold.on).or_default().push(hold);
    }
    let mut verdict = Verdict {
        holds: holds.len(),
        ..Verdict::default()
    };
    for holds in by_thing.values() {
        sweep(rule, holds, &mut verdict);
    }
    Ok(verdict)
}

/// One thing's holds in time order: each beginning is checked against those held then. A
/// hold ending at the very nanosecond another begins is not held with it.
fn sweep(rule: Rule, holds: &[&Hold], verdict: &mut Verdict) {
    // (time, 0 for an end and 1 for a beginning, index): ends sort first at equal times.
    let mut events: Vec<(u64, u8, usize)> = Vec::with_capacity(holds.len() * 2);
    for (i, h) in holds.iter().enumerate() {
        events.push((h.from, 1, i));
        events.push((h.to, 0, i));
    }
    events.sort_unstable();
    let mut held: Vec<usize> = Vec::new();
    for (_, kind, i) in events {
        let Some(&hold) = holds.get(i) else { continue };
        if kind == 0 {
            held.retain(|&k| k != i);
            continue;
        }
        let others = || held.iter().filter_map(|&k| holds.get(k).copied());
        let conflict = match rule {
            Rule::Leases(n) => (held.len() >= n as usize)
                .then(|| others().next())
                .flatten(),
            _ => others().find(|other| !rule.compatible(other, hold)),
        };
        if hold.mode == Mode::Read && others().any(|o| o.mode == Mode::Write && o.who == hold.who) {
            verdict.downgrades += 1;
        }
        if let Some(earlier) = conflict {
            verdict.violations += 1;
            if verdict.conflicts.len() < KEPT {
                verdict.conflicts.push(Conflict {
                    later: hold.clone(),
                    earlier: earlier.clone(),
                    held: held.len(),
                });
            }
        }
        held.push(i);
        verdict.peak = verdict.peak.max(held.len());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn h(who: &str, on: &str, mode: Mode, from: u64, to: u64) -> Hold {
        Hold {
            who: who.into(),
            n: 1,
            on: on.into(),
            mode,
            from,
            to,
            node: None,
            token: None,
        }
    }

    #[test]
    fn exclusive_holds_may_touch_but_not_overlap() {
        let x = Mode::Exclusive;
        let ok = [
            h("java-0", "lock", x, 0, 10),
            h("rust-0", "lock", x, 10, 20),
        ];
        assert_eq!(check(Rule::Exclusive, &ok).unwrap().violations, 0);
        let bad = [h("java-0", "lock", x, 0, 10), h("rust-0", "lock", x, 9, 20)];
        let v = check(Rule::Exclusive, &bad).unwrap();
        assert_eq!(v.violations, 1);
        assert_eq!(v.conflicts[0].later.who, "rust-0");
        assert_eq!(v.conflicts[0].earlier.who, "java-0");
        // Inside another.
        let inside = [h("java-0", "lock", x, 0, 10), h("rust-0", "lock", x, 2, 3)];
        assert_eq!(check(Rule::Exclusive, &inside).unwrap().violations, 1);
        // The same client twice is two holders too (our loops never re-enter).
        let twice = [h("rust-0", "lock", x, 0, 10), h("rust-0", "lock", x, 5, 15)];
        assert_eq!(check(Rule::Exclusive, &twice).unwrap().violations, 1);
    }

    #[test]
    fn each_member_is_its_own_lock() {
        let x = Mode::Exclusive;
        let holds = [
            h("java-0", "member-0", x, 0, 10),
            h("rust-0", "member-1", x, 0, 10),
            h("rust-1", "member-2", x, 5, 8),
        ];
        assert_eq!(check(Rule::Exclusive, &holds).unwrap().violations, 0);
        let holds = [
            h("java-0", "member-0", x, 0, 10),
            h("java-0", "member-1", x, 0, 10),
            h("rust-0", "member-1", x, 5, 8),
        ];
        let v = check(Rule::Exclusive, &holds).unwrap();
        assert_eq!(v.violations, 1);
        assert_eq!(v.conflicts[0].later.on, "member-1");
    }

    #[test]
    fn readers_share_and_writers_do_not() {
        let (r, w) = (Mode::Read, Mode::Write);
        let rule = Rule::ReadersOrOneWriter;
        let readers = [h("java-0", "lock", r, 0, 10), h("rust-0", "lock", r, 5, 15)];
        assert_eq!(check(rule, &readers).unwrap().violations, 0);
        let reader_then_writer = [h("java-0", "lock", r, 0, 10), h("rust-0", "lock", w, 5, 15)];
        assert_eq!(check(rule, &reader_then_writer).unwrap().violations, 1);
        let writer_then_reader = [h("java-0", "lock", w, 0, 10), h("rust-0", "lock", r, 5, 15)];
        assert_eq!(check(rule, &writer_then_reader).unwrap().violations, 1);
        let writers = [h("java-0", "lock", w, 0, 10), h("rust-0", "lock", w, 5, 15)];
        assert_eq!(check(rule, &writers).unwrap().violations, 1);
    }

    #[test]
    fn a_downgrade_is_counted_and_allowed_but_only_for_its_own_client() {
        let (r, w) = (Mode::Read, Mode::Write);
        let rule = Rule::ReadersOrOneWriter;
        // rust-0 writes, reads, lets the write go, then a Curator reader joins its read.
        let holds = [
            h("rust-0", "lock", w, 0, 10),
            h("rust-0", "lock", r, 8, 20),
            h("java-1", "lock", r, 12, 18),
        ];
        let v = check(rule, &holds).unwrap();
        assert_eq!((v.violations, v.downgrades), (0, 1));
        // Curator's reader joining before the write went: a violation.
        let holds = [
            h("rust-0", "lock", w, 0, 10),
            h("rust-0", "lock", r, 8, 20),
            h("java-1", "lock", r, 9, 18),
        ];
        assert_eq!(check(rule, &holds).unwrap().violations, 1);
    }

    #[test]
    fn leases_are_counted() {
        let l = Mode::Lease;
        let three = [
            h("java-0", "leases", l, 0, 10),
            h("rust-0", "leases", l, 1, 10),
            h("rust-0", "leases", l, 1, 10),
        ];
        let v = check(Rule::Leases(3), &three).unwrap();
        assert_eq!((v.violations, v.peak), (0, 3));
        let mut four = three.to_vec();
        four.push(h("java-1", "leases", l, 9, 12));
        let v = check(Rule::Leases(3), &four).unwrap();
        assert_eq!((v.violations, v.peak), (1, 4));
        assert_eq!(v.conflicts[0].later.who, "java-1");
        assert_eq!(v.conflicts[0].held, 3);
        // After one ends, a fourth fits.
        let mut later = three.to_vec();
        later.push(h("java-1", "leases", l, 10, 12));
        assert_eq!(check(Rule::Leases(3), &later).unwrap().violations, 0);
        // A semaphore mutex is one lease.
        let two = [h("java-0", "lock", l, 0, 10), h("rust-0", "lock", l, 3, 4)];
        assert_eq!(check(Rule::Leases(1), &two).unwrap().violations, 1);
    }

    #[test]
    fn a_mode_the_rule_does_not_know_is_an_error() {
        let holds = [h("rust-0", "lock", Mode::Read, 0, 1)];
        assert!(check(Rule::Exclusive, &holds).is_err());
        assert!(check(Rule::Leases(2), &holds).is_err());
        let holds = [h("rust-0", "lock", Mode::Exclusive, 0, 1)];
        assert!(check(Rule::ReadersOrOneWriter, &holds).is_err());
    }

    /// The sweep against the plain pairwise definition, on random holds.
    #[test]
    fn the_sweep_agrees_with_pairwise_overlaps() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..300 {
            let holds: Vec<Hold> = (0..8)
                .map(|_| {
                    let from = next(100);
                    let who = format!("rust-{}", next(3));
                    h(&who, "lock", Mode::Exclusive, from, from + 1 + next(20))
                })
                .collect();
            let pairwise = (0..holds.len())
                .filter(|&i| {
                    (0..holds.len()).any(|j| {
                        let (a, b) = (&holds[i], &holds[j]);
                        i != j && (b.from, j) < (a.from, i) && a.from < b.to && b.from < a.to
                    })
                })
                .count() as u64;
            let v = check(Rule::Exclusive, &holds).unwrap();
            assert_eq!(v.violations, pairwise, "{holds:?}");
        }
    }
}
