//! The exclusive side: one local holder at a time ([`Cohort`]), for a mutex or a write lock.
//!
//! What it keeps true (checked by the exhaustive test in this module over every sequence of
//! events to a depth):
//! - at most one local holder, and a holder only while the node is held;
//! - a waiter is never stranded: while one waits, the node is held (by a holder who will
//!   release) or an attempt is under way;
//! - the node is never held with no holder (it is released when the last holder leaves with
//!   nobody waiting) and no attempt runs with nobody waiting (it is aborted when the last
//!   waiter leaves);
//! - at most [`Bound::handoffs`] local hand-offs per node, none once [`Bound::hold`] has passed
//!   since the node was granted, none on a node the caller says may be lost;
//! - the local sequence of successive holders of one node strictly increases from 1.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::{AttemptId, Bound, Standard, WaiterId, sealed::Sealed};

/// The decisions of a [`Cohort`], one rule function each; [`Standard`] keeps the rules the
/// module describes. Sealed: implemented in this crate only.
pub trait CohortRules: Sealed {
    /// Whether a waiter leaving, with `left` waiters still waiting, aborts the attempt under
    /// way.
    fn leave_aborts(&self, left: usize) -> bool;

    /// Whether a release may hand the lock on to the next local waiter: `valid` is whether
    /// the node is surely still the process's, `handoffs` the hand-offs made on it so far,
    /// `held` the time since it was granted.
    fn may_hand_on(&self, bound: Bound, valid: bool, handoffs: u32, held: Duration) -> bool;
}

impl CohortRules for Standard {
    /// Only the last: an attempt runs only while someone waits for it.
    fn leave_aborts(&self, left: usize) -> bool {
        left == 0
    }

    /// Only on a sure node, within both the count and the time of `bound`.
    fn may_hand_on(&self, bound: Bound, valid: bool, handoffs: u32, held: Duration) -> bool {
        valid && handoffs < bound.handoffs && held < bound.hold
    }
}

/// What the IO layer does after an event, in this order.
#[derive(Debug)]
#[must_use = "the effects are what the IO layer has to carry out"]
pub struct Effects<W> {
    /// Give the lock to this waiter, as the `local`-th holder of the node (1 for the holder
    /// the node was granted to).
    pub grant: Option<(W, u64)>,
    /// The attempt failed: give each of these waiters its error.
    pub fail: Vec<W>,
    /// Release the node (delete it; also a node an aborted attempt still got).
    pub release_node: bool,
    /// Abort this attempt (its cleanup deletes whatever it created).
    pub abort: Option<AttemptId>,
    /// Start an attempt to take the node (after the release above is sent, so the new node
    /// queues behind every other process's waiter).
    pub start: Option<AttemptId>,
}

impl<W> Default for Effects<W> {
    fn default() -> Self {
        Self {
            grant: None,
            fail: Vec::new(),
            release_node: false,
            abort: None,
            start: None,
        }
    }
}

/// The node's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    /// Not held, no attempt.
    Free,
    /// An attempt is taking it.
    Taking(AttemptId),
    /// Held by one local holder.
    Held(Batch),
}

/// The holders of one node so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Batch {
    /// When the node was granted.
    since: Instant,
    /// Local hand-offs so far.
    handoffs: u32,
    /// The current holder's local sequence.
    local: u64,
}

/// One lock's cohort in one process: its local waiters, in arrival order, and its node,
/// deciding by `R`'s rules.
#[derive(Debug, Clone)]
pub struct Cohort<W, R = Standard> {
    bound: Bound,
    waiters: BTreeMap<WaiterId, W>,
    next_waiter: WaiterId,
    next_attempt: AttemptId,
    node: Node,
    rules: R,
}

impl<W> Cohort<W> {
    /// An idle cohort with `bound`.
    pub fn new(bound: Bound) -> Self {
        Self::with_rules(bound, Standard)
    }
}

impl<W, R: CohortRules> Cohort<W, R> {
    /// An idle cohort with `bound`, deciding by `rules`.
    pub fn with_rules(bound: Bound, rules: R) -> Self {
        Self {
            bound,
            waiters: BTreeMap::new(),
            next_waiter: 0,
            next_attempt: 0,
            node: Node::Free,
            rules,
        }
    }

    /// The bound.
    pub fn bound(&self) -> Bound {
        self.bound
    }

    /// Local waiters.
    pub fn waiting(&self) -> usize {
        self.waiters.len()
    }

    /// Whether a local holder holds the node.
    pub fn is_held(&self) -> bool {
        matches!(self.node, Node::Held(_))
    }

    /// The attempt under way, if one is.
    pub fn attempt(&self) -> Option<AttemptId> {
        match self.node {
            Node::Taking(a) => Some(a),
            _ => None,
        }
    }

    /// A waiter arrives: its place, and an attempt to start if none is under way and the node
    /// is not held.
    pub fn arrive(&mut self, waiter: W) -> (WaiterId, Effects<W>) {
        let id = self.next_waiter;
        self.next_waiter += 1;
        self.waiters.insert(id, waiter);
        let mut effects = Effects::default();
        if self.node == Node::Free {
            effects.start = Some(self.start());
        }
        (id, effects)
    }

    /// Waiter `id` leaves (cancelled or timed out; nothing if it was already granted or
    /// failed): the attempt is aborted if nobody waits any more.
    pub fn leave(&mut self, id: WaiterId) -> Effects<W> {
        let mut effects = Effects::default();
        if self.waiters.remove(&id).is_some() && self.rules.leave_aborts(self.waiters.len()) {
            if let Node::Taking(attempt) = self.node {
                self.node = Node::Free;
                effects.abort = Some(attempt);
            }
        }
        effects
    }

    /// Attempt `attempt` holds the node, at `now`: the first waiter is its first holder. A
    /// node nobody waits for any more, or got by an attempt already aborted, is released.
    pub fn attempt_held(&mut self, attempt: AttemptId, now: Instant) -> Effects<W> {
        let mut effects = Effects::default();
        if self.node != Node::Taking(attempt) {
            effects.release_node = true;
            return effects;
        }
        match self.waiters.pop_first() {
            Some((_, first)) => {
                self.node = Node::Held(Batch {
                    since: now,
                    handoffs: 0,
                    local: 1,
                });
                effects.grant = Some((first, 1));
            }
            None => {
                self.node = Node::Free;
                effects.release_node = true;
            }
        }
        effects
    }

    /// Attempt `attempt` ended without the node (an error every waiter shares, such as the
    /// session's end): every waiter fails with it. Nothing for an attempt already aborted.
    pub fn attempt_failed(&mut self, attempt: AttemptId) -> Effects<W> {
        let mut effects = Effects::default();
        if self.node == Node::Taking(attempt) {
            self.node = Node::Free;
            effects.fail = std::mem::take(&mut self.waiters).into_values().collect();
        }
        effects
    }

    /// The holder releases at `now`; `valid` is whether the node is surely still the
    /// process's (its session connected): the lock goes to the next local waiter while the
    /// bound allows and `valid`, else the node is released, and an attempt started for the
    /// waiters left. Nothing if no holder holds (a caller's bug, kept harmless).
    pub fn release(&mut self, valid: bool, now: Instant) -> Effects<W> {
        let mut effects = Effects::default();
        let Node::Held(batch) = self.node else {
            return effects;
        };
        let held = now.saturating_duration_since(batch.since);
        let hand_on = self
            .rules
            .may_hand_on(self.bound, valid, batch.handoffs, held);
        if hand_on {
            if let Some((_, next)) = self.waiters.pop_first() {
                let local = batch.local + 1;
                self.node = Node::Held(Batch {
                    handoffs: batch.handoffs + 1,
                    local,
                    ..batch
                });
                effects.grant = Some((next, local));
                return effects;
            }
        }
        effects.release_node = true;
        self.node = Node::Free;
        if !self.waiters.is_empty() {
            effects.start = Some(self.start());
        }
        effects
    }

    fn start(&mut self) -> AttemptId {
        let attempt = self.next_attempt;
        self.next_attempt += 1;
        self.node = Node::Taking(attempt);
        attempt
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::cohort::search::{self, Explore};

    /// Defects the exploration must find.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Plant {
        /// The last waiter leaving does not abort the attempt.
        NoAbort,
        /// A node that may be lost is handed on.
        HandOffUnsure,
        /// Hand-offs are not counted against the bound.
        NoCount,
    }

    /// The rules with `Plant` in them: [`Standard`]'s everywhere else.
    #[derive(Debug, Clone, Copy)]
    struct Planted(Plant);

    impl crate::cohort::sealed::Sealed for Planted {}

    impl CohortRules for Planted {
        fn leave_aborts(&self, left: usize) -> bool {
            self.0 != Plant::NoAbort && Standard.leave_aborts(left)
        }

        fn may_hand_on(&self, bound: Bound, valid: bool, handoffs: u32, held: Duration) -> bool {
            match self.0 {
                Plant::HandOffUnsure => Standard.may_hand_on(bound, true, handoffs, held),
                Plant::NoCount => valid,
                Plant::NoAbort => Standard.may_hand_on(bound, valid, handoffs, held),
            }
        }
    }

    /// The model's world around a cohort: which waiters exist and what each is doing, the
    /// node's attempts, the holder, the server's node.
    #[derive(Debug, Clone)]
    struct World<R> {
        cohort: Cohort<u8, R>,
        /// Waiters that arrived and neither left nor got an answer: (model name, id).
        waiting: Vec<(u8, WaiterId)>,
        /// The local holder: its name and local sequence.
        holder: Option<(u8, u64)>,
        /// Attempts started and not yet answered (their result may still come, also after
        /// an abort).
        attempts: Vec<AttemptId>,
        /// Whether the process has a node on the server (granted to it, not yet released).
        node_on_server: bool,
        /// The last local sequence granted on the current node.
        last_local: u64,
        /// When the current node was granted.
        node_since: Instant,
        /// Names given so far.
        arrived: u8,
        now: Instant,
        start: Instant,
    }

    impl<R: CohortRules> World<R> {
        fn apply(&mut self, effects: Effects<u8>) -> Result<(), String> {
            if let Some((who, local)) = effects.grant {
                if self.holder.is_some() {
                    return Err(format!("{who} granted while {:?} holds", self.holder));
                }
                if !self.node_on_server {
                    return Err(format!("{who} granted with no node held on the server"));
                }
                if local != self.last_local + 1 {
                    return Err(format!("local {local} after {}", self.last_local));
                }
                // The model's own count of the bound: the first holder is granted by the
                // server, each later one is a local hand-off.
                if local == 1 {
                    self.node_since = self.now;
                } else {
                    let bound = self.cohort.bound();
                    if local - 1 > u64::from(bound.handoffs) {
                        return Err(format!("{} hand-offs past the bound", local - 1));
                    }
                    if self.now.duration_since(self.node_since) >= bound.hold {
                        return Err("a hand-off past the bound's time".into());
                    }
                }
                self.last_local = local;
                self.waiting.retain(|(w, _)| *w != who);
                self.holder = Some((who, local));
            }
            for who in effects.fail {
                self.waiting.retain(|(w, _)| *w != who);
            }
            if effects.release_node {
                self.node_on_server = false;
                self.last_local = 0;
            }
            if let Some(a) = effects.abort {
                if !self.attempts.contains(&a) {
                    return Err(format!("abort of attempt {a}, not under way"));
                }
            }
            if let Some(a) = effects.start {
                self.attempts.push(a);
            }
            self.check()
        }

        /// The invariants, after every event.
        fn check(&self) -> Result<(), String> {
            let c = &self.cohort;
            if self.holder.is_some() != c.is_held() {
                return Err(format!("holder {:?} but node {:?}", self.holder, c.node));
            }
            if self.holder.is_some() && !self.node_on_server {
                return Err("a holder with no node on the server".into());
            }
            if !self.waiting.is_empty() && !c.is_held() && c.attempt().is_none() {
                return Err(format!("waiters {:?} stranded", self.waiting));
            }
            if self.waiting.is_empty() && c.attempt().is_some() {
                return Err("an attempt runs with nobody waiting".into());
            }
            if let Some(a) = c.attempt() {
                if !self.attempts.contains(&a) {
                    return Err(format!("attempt {a} current but never started"));
                }
            }
            if self.node_on_server && self.holder.is_none() {
                return Err("the node held on the server with no holder".into());
            }
            if c.waiting() != self.waiting.len() {
                return Err("the cohort's waiters and the model's differ".into());
            }
            Ok(())
        }
    }

    impl<R: CohortRules + Clone> Explore for World<R> {
        type Event = Event;

        fn key(&self) -> String {
            format!(
                "{:?}|{:?}|{:?}|{:?}|{:?}|{}|{}|{:?}",
                self.cohort.node.map_since(self.start),
                self.node_since.duration_since(self.start),
                self.waiting,
                self.holder,
                self.attempts,
                self.node_on_server,
                self.arrived,
                self.now.duration_since(self.start)
            )
        }

        /// Every event that can happen next.
        fn events(&self, max_waiters: u8) -> Vec<Event> {
            let mut out = Vec::new();
            if self.arrived < max_waiters {
                out.push(Event::Arrive);
            }
            for &(w, _) in &self.waiting {
                out.push(Event::Leave(w));
            }
            for &a in &self.attempts {
                out.push(Event::Held(a));
                out.push(Event::Failed(a));
            }
            if self.holder.is_some() {
                out.push(Event::Release { valid: true });
                out.push(Event::Release { valid: false });
            }
            out.push(Event::Tick);
            out
        }

        fn step(&mut self, event: Event) -> Result<(), String> {
            match event {
                Event::Arrive => {
                    let name = self.arrived;
                    self.arrived += 1;
                    let (id, effects) = self.cohort.arrive(name);
                    self.waiting.push((name, id));
                    self.apply(effects)
                }
                Event::Leave(w) => {
                    let (_, id) = *self.waiting.iter().find(|(n, _)| *n == w).unwrap();
                    self.waiting.retain(|(n, _)| *n != w);
                    let effects = self.cohort.leave(id);
                    self.apply(effects)
                }
                Event::Held(a) => {
                    self.attempts.retain(|x| *x != a);
                    if self.cohort.attempt() != Some(a) {
                        // An aborted attempt's node, granted before the abort took: it
                        // goes at once, to nobody.
                        let effects = self.cohort.attempt_held(a, self.now);
                        if effects.grant.is_some() || !effects.release_node {
                            return Err(format!("aborted attempt {a}'s node kept"));
                        }
                        return self.check();
                    }
                    // The server granted the node: the process has it until it releases.
                    if self.node_on_server {
                        return Err("two nodes of the process held at once".into());
                    }
                    self.node_on_server = true;
                    let effects = self.cohort.attempt_held(a, self.now);
                    self.apply(effects)
                }
                Event::Failed(a) => {
                    self.attempts.retain(|x| *x != a);
                    let effects = self.cohort.attempt_failed(a);
                    self.apply(effects)
                }
                Event::Release { valid } => {
                    self.holder = None;
                    let effects = self.cohort.release(valid, self.now);
                    if !valid && effects.grant.is_some() {
                        return Err("granted after an unsure release".into());
                    }
                    self.apply(effects)
                }
                Event::Tick => {
                    self.now += Duration::from_millis(10);
                    self.check()
                }
            }
        }
    }

    impl Node {
        /// The node with its time made relative, for the visited set.
        fn map_since(self, start: Instant) -> String {
            match self {
                Node::Held(b) => format!(
                    "held({:?},{},{})",
                    b.since.duration_since(start),
                    b.handoffs,
                    b.local
                ),
                other => format!("{other:?}"),
            }
        }
    }

    #[derive(Debug, Clone, Copy)]
    enum Event {
        Arrive,
        Leave(u8),
        Held(AttemptId),
        Failed(AttemptId),
        Release { valid: bool },
        Tick,
    }

    /// Every sequence of events to `depth` (states visited once), checking the invariants
    /// after each; returns the states explored.
    fn explore(bound: Bound, max_waiters: u8, depth: usize) -> usize {
        match explore_with(bound, max_waiters, depth, Standard) {
            Ok(states) => states,
            Err(why) => panic!("{why}"),
        }
    }

    /// [`explore`] with a cohort deciding by `rules`: the first violation found, with its
    /// trace.
    fn explore_with<R: CohortRules + Clone>(
        bound: Bound,
        max_waiters: u8,
        depth: usize,
        rules: R,
    ) -> Result<usize, String> {
        let start = Instant::now();
        let world = World {
            cohort: Cohort::with_rules(bound, rules),
            waiting: Vec::new(),
            holder: None,
            attempts: Vec::new(),
            node_on_server: false,
            last_local: 0,
            node_since: start,
            arrived: 0,
            now: start,
            start,
        };
        search::explore(world, max_waiters, depth)
    }

    #[test]
    fn every_sequence_of_events_keeps_one_holder_no_stranded_waiter_and_no_idle_node() {
        let bound = Bound {
            handoffs: 2,
            hold: Duration::from_millis(25),
        };
        let states = explore(bound, 5, 18);
        eprintln!("{states} states");
        assert!(states > 10_000, "{states} states");
        // No cohorting at all is a bound too.
        let none = Bound {
            handoffs: 0,
            hold: Duration::ZERO,
        };
        assert!(explore(none, 3, 10) > 500);
    }

    #[test]
    fn the_exploration_finds_each_planted_defect() {
        let bound = Bound {
            handoffs: 2,
            hold: Duration::from_millis(25),
        };
        for (plant, finding) in [
            (Plant::NoAbort, "an attempt runs with nobody waiting"),
            (Plant::NoCount, "past the bound"),
        ] {
            let found = explore_with(bound, 4, 12, Planted(plant)).unwrap_err();
            assert!(found.contains(finding), "{plant:?}: {found}");
        }
        // A hand-off on a node that may be lost is seen by the model's own rule.
        let found = explore_with(bound, 4, 12, Planted(Plant::HandOffUnsure)).unwrap_err();
        assert!(found.contains("granted after an unsure release"), "{found}");
    }

    #[test]
    fn a_batch_is_cut_by_the_count_the_time_and_an_unsure_node() {
        let t0 = Instant::now();
        let bound = Bound {
            handoffs: 2,
            hold: Duration::from_millis(50),
        };
        let mut c = Cohort::new(bound);
        let (_, e) = c.arrive('a');
        assert_eq!(e.start, Some(0));
        for w in ['b', 'c', 'd'] {
            let (_, e) = c.arrive(w);
            assert!(e.start.is_none() && e.grant.is_none());
        }
        let e = c.attempt_held(0, t0);
        assert_eq!(e.grant, Some(('a', 1)));
        let e = c.release(true, t0);
        assert_eq!(e.grant, Some(('b', 2)));
        let e = c.release(true, t0);
        assert_eq!(e.grant, Some(('c', 3)));
        // Two hand-offs: the node goes, and a new attempt queues for `d` behind the others.
        let e = c.release(true, t0);
        assert!(e.grant.is_none() && e.release_node);
        assert_eq!(e.start, Some(1));
        let e = c.attempt_held(1, t0);
        assert_eq!(e.grant, Some(('d', 1)));
        // The time bound.
        let (_, _) = c.arrive('e');
        let e = c.release(true, t0 + Duration::from_millis(50));
        assert!(e.release_node && e.start == Some(2));
        let e = c.attempt_held(2, t0);
        assert_eq!(e.grant, Some(('e', 1)));
        // An unsure node is never handed on.
        let (_, _) = c.arrive('f');
        let e = c.release(false, t0);
        assert!(e.grant.is_none() && e.release_node && e.start == Some(3));
        // The last waiter leaving aborts the attempt; its late node is released.
        let e = c.leave(5);
        assert_eq!(e.abort, Some(3));
        let e = c.attempt_held(3, t0);
        assert!(e.release_node && e.grant.is_none());
    }

    #[test]
    fn a_failed_attempt_fails_every_waiter_and_a_stale_one_nobody() {
        let mut c = Cohort::new(Bound::default());
        let _ = c.arrive(1);
        let _ = c.arrive(2);
        let e = c.attempt_failed(7);
        assert!(e.fail.is_empty());
        let e = c.attempt_failed(0);
        assert_eq!(e.fail, vec![1, 2]);
        assert_eq!((c.waiting(), c.attempt()), (0, None));
    }
}
