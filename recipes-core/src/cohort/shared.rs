//! The shared side: the readers of one process on one read/write lock share one read node
//! ([`SharedCohort`]).
//!
//! A reader arriving while the process holds a read node whose batch is open joins it at
//! once, with no request; otherwise it waits for the process's next read node, which one
//! attempt (the read lock's ordinary acquire) takes for every reader waiting, and all of them
//! hold together when it is granted. A batch closes for good after [`Bound::handoffs`]
//! readers joined it, once [`Bound::hold`] has passed since its node was granted, when the
//! node may be lost, or when [`SharedCohort::close`] is called; while a writer of the process
//! waits ([`SharedCohort::writer_waits`] to [`SharedCohort::writer_done`]), the open batch is
//! closed and every batch granted opens closed: only the readers that waited for its node
//! read on it. Its node is released when its last reader leaves. A reader arriving after that
//! takes a new node, at the back of the lock's queue: behind any writer that queued
//! meanwhile, which so waits for the readers already in or already waiting only, never for
//! newcomers.
//!
//! What it keeps true (checked by the exhaustive test in this module over every sequence of
//! events to a depth):
//! - a reader holds only while its batch's node is held on the server;
//! - no reader joins a closed batch: at most [`Bound::handoffs`] joins per node, none once
//!   [`Bound::hold`] has passed since the node was granted, none on a node the caller says
//!   may be lost, none after [`SharedCohort::close`], none while a local writer waits;
//! - a waiter is never stranded: while one waits, an attempt is under way; no attempt runs
//!   with nobody waiting;
//! - no node is held with no reader: each is released when its last reader leaves;
//! - the local sequence of one node's readers strictly increases from 1.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::{AttemptId, Bound, Standard, WaiterId, sealed::Sealed};

/// A read node of the process: the number of the attempt that took it.
pub type BatchId = AttemptId;

/// The decisions of a [`SharedCohort`], one rule function each; [`Standard`] keeps the rules
/// the module describes. Sealed: implemented in this crate only.
pub trait SharedRules: Sealed {
    /// Whether a waiter leaving, with `left` waiters still waiting, aborts the attempt under
    /// way.
    fn leave_aborts(&self, left: usize) -> bool;

    /// Whether a reader arriving may join the open batch: `valid` is whether its node is
    /// surely still the process's, `joins` the readers that joined it so far, `held` the time
    /// since it was granted.
    fn may_join(&self, bound: Bound, valid: bool, joins: u32, held: Duration) -> bool;

    /// The node newcomers may join after [`SharedCohort::close`], `open` the one they could
    /// join before.
    fn open_after_close(&self, open: Option<BatchId>) -> Option<BatchId>;

    /// Whether a node is released when one of its readers leaves and `readers` still read on
    /// it.
    fn releases_node(&self, readers: u32) -> bool;

    /// Whether a node granted while `writers` writers of the process wait opens to newcomers.
    fn opens(&self, writers: u32) -> bool;
}

impl SharedRules for Standard {
    /// Only the last: an attempt runs only while someone waits for it.
    fn leave_aborts(&self, left: usize) -> bool {
        left == 0
    }

    /// Only a sure node, within both the count and the time of `bound`.
    fn may_join(&self, bound: Bound, valid: bool, joins: u32, held: Duration) -> bool {
        valid && joins < bound.handoffs && held < bound.hold
    }

    /// None: the batch is closed for good.
    fn open_after_close(&self, _open: Option<BatchId>) -> Option<BatchId> {
        None
    }

    /// With its last reader.
    fn releases_node(&self, readers: u32) -> bool {
        readers == 0
    }

    /// Only while none waits: a node granted meanwhile was queued ahead of the writer's, and
    /// only the readers already waiting for it read on it.
    fn opens(&self, writers: u32) -> bool {
        writers == 0
    }
}

/// What the IO layer does after an event, in this order.
#[derive(Debug)]
#[must_use = "the effects are what the IO layer has to carry out"]
pub struct SharedEffects<W> {
    /// Give each of these waiters the read lock on node `BatchId`, as its `u64`-th reader
    /// (from 1).
    pub grant: Vec<(W, BatchId, u64)>,
    /// The attempt failed: give each of these waiters its error.
    pub fail: Vec<W>,
    /// Release this node (its last reader left; or a node an aborted attempt still got).
    pub release_node: Option<BatchId>,
    /// Abort this attempt (its cleanup deletes whatever it created).
    pub abort: Option<AttemptId>,
    /// Start an attempt to take a new read node.
    pub start: Option<AttemptId>,
}

impl<W> Default for SharedEffects<W> {
    fn default() -> Self {
        Self {
            grant: Vec::new(),
            fail: Vec::new(),
            release_node: None,
            abort: None,
            start: None,
        }
    }
}

/// The readers of one read node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Batch {
    /// When the node was granted.
    since: Instant,
    /// Readers that joined after the grant.
    joins: u32,
    /// Readers holding now.
    readers: u32,
    /// The last reader's local sequence.
    local: u64,
}

/// The readers of one read/write lock in one process: those waiting (in arrival order), the
/// attempt taking the next read node, the nodes held (each with its readers), and which of
/// them is open to newcomers; deciding by `R`'s rules.
#[derive(Debug, Clone)]
pub struct SharedCohort<W, R = Standard> {
    bound: Bound,
    waiters: BTreeMap<WaiterId, W>,
    next_waiter: WaiterId,
    next_attempt: AttemptId,
    taking: Option<AttemptId>,
    /// The node newcomers may join, while its batch allows.
    open: Option<BatchId>,
    /// The nodes held, open or closing.
    batches: BTreeMap<BatchId, Batch>,
    /// Writers of the process waiting for the lock: while any does, no batch is open.
    writers: u32,
    rules: R,
}

impl<W> SharedCohort<W> {
    /// An idle cohort with `bound`.
    pub fn new(bound: Bound) -> Self {
        Self::with_rules(bound, Standard)
    }
}

impl<W, R: SharedRules> SharedCohort<W, R> {
    /// An idle cohort with `bound`, deciding by `rules`.
    pub fn with_rules(bound: Bound, rules: R) -> Self {
        Self {
            bound,
            waiters: BTreeMap::new(),
            next_waiter: 0,
            next_attempt: 0,
            taking: None,
            open: None,
            batches: BTreeMap::new(),
            writers: 0,
            rules,
        }
    }

    /// The bound.
    pub fn bound(&self) -> Bound {
        self.bound
    }

    /// Local readers waiting.
    pub fn waiting(&self) -> usize {
        self.waiters.len()
    }

    /// Local readers holding, over every node.
    pub fn readers(&self) -> u64 {
        self.batches.values().map(|b| u64::from(b.readers)).sum()
    }

    /// The attempt under way, if one is.
    pub fn attempt(&self) -> Option<AttemptId> {
        self.taking
    }

    /// The node newcomers may join (if its batch still allows at their arrival).
    pub fn open(&self) -> Option<BatchId> {
        self.open
    }

    /// A reader arrives at `now`; `valid` is whether the open node (if any) is surely still
    /// the process's (its session connected). It joins the open batch if the batch allows
    /// (granted at once), else waits: the batch is closed, and an attempt started if none is
    /// under way.
    pub fn arrive(&mut self, waiter: W, valid: bool, now: Instant) -> (WaiterId, SharedEffects<W>) {
        let id = self.next_waiter;
        self.next_waiter += 1;
        let mut effects = SharedEffects::default();
        if let Some(open) = self.open {
            if let Some(batch) = self.batches.get_mut(&open) {
                let held = now.saturating_duration_since(batch.since);
                if self.rules.may_join(self.bound, valid, batch.joins, held) {
                    batch.joins += 1;
                    batch.readers += 1;
                    batch.local += 1;
                    effects.grant.push((waiter, open, batch.local));
                    return (id, effects);
                }
            }
            self.open = None;
        }
        self.waiters.insert(id, waiter);
        if self.taking.is_none() {
            effects.start = Some(self.start());
        }
        (id, effects)
    }

    /// Closes the open batch: readers arriving from now on take a new node, behind whatever
    /// queued meanwhile (a writer of this process, say).
    pub fn close(&mut self) {
        self.open = self.rules.open_after_close(self.open);
    }

    /// A writer of the process starts waiting for the lock: the open batch closes, and until
    /// [`SharedCohort::writer_done`] every batch granted opens closed, so that no newcomer
    /// reads ahead of the writer (a read node granted meanwhile was queued before the
    /// writer's node: only the readers already waiting for it read on it).
    pub fn writer_waits(&mut self) {
        self.writers = self.writers.saturating_add(1);
        self.close();
    }

    /// A writer that waited holds, gave up or failed: batches open again.
    pub fn writer_done(&mut self) {
        self.writers = self.writers.saturating_sub(1);
    }

    /// Waiter `id` leaves (cancelled or timed out; nothing if it was already granted or
    /// failed): the attempt is aborted if nobody waits any more.
    pub fn leave(&mut self, id: WaiterId) -> SharedEffects<W> {
        let mut effects = SharedEffects::default();
        if self.waiters.remove(&id).is_some() && self.rules.leave_aborts(self.waiters.len()) {
            effects.abort = self.taking.take();
        }
        effects
    }

    /// Attempt `attempt` holds a node, at `now`: every waiter reads on it, and it is open to
    /// newcomers. A node nobody waits for any more, or got by an attempt already aborted, is
    /// released.
    pub fn attempt_held(&mut self, attempt: AttemptId, now: Instant) -> SharedEffects<W> {
        let mut effects = SharedEffects::default();
        if self.taking != Some(attempt) || self.waiters.is_empty() {
            if self.taking == Some(attempt) {
                self.taking = None;
            }
            effects.release_node = Some(attempt);
            return effects;
        }
        self.taking = None;
        let mut batch = Batch {
            since: now,
            joins: 0,
            readers: 0,
            local: 0,
        };
        for (_, waiter) in std::mem::take(&mut self.waiters) {
            batch.readers += 1;
            batch.local += 1;
            effects.grant.push((waiter, attempt, batch.local));
        }
        self.batches.insert(attempt, batch);
        self.open = self.rules.opens(self.writers).then_some(attempt);
        effects
    }

    /// Attempt `attempt` ended without a node (an error every waiter shares, such as the
    /// session's end): every waiter fails with it. Nothing for an attempt already aborted.
    pub fn attempt_failed(&mut self, attempt: AttemptId) -> SharedEffects<W> {
        let mut effects = SharedEffects::default();
        if self.taking == Some(attempt) {
            self.taking = None;
            effects.fail = std::mem::take(&mut self.waiters).into_values().collect();
        }
        effects
    }

    /// A reader of node `batch` releases: the node is released with its last reader.
    /// Nothing for a node not held (a caller's bug, kept harmless).
    pub fn release(&mut self, batch: BatchId) -> SharedEffects<W> {
        let mut effects = SharedEffects::default();
        let Some(b) = self.batches.get_mut(&batch) else {
            return effects;
        };
        b.readers = b.readers.saturating_sub(1);
        if self.rules.releases_node(b.readers) {
            self.batches.remove(&batch);
            if self.open == Some(batch) {
                self.open = None;
            }
            effects.release_node = Some(batch);
        }
        effects
    }

    fn start(&mut self) -> AttemptId {
        let attempt = self.next_attempt;
        self.next_attempt += 1;
        self.taking = Some(attempt);
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
        /// A reader joins a node that may be lost.
        JoinUnsure,
        /// Joins are not counted against the bound.
        NoCount,
        /// `close` does nothing.
        NoClose,
        /// A node is kept when its last reader leaves.
        KeepIdle,
        /// A batch granted while a local writer waits opens to newcomers.
        WriterIgnored,
    }

    /// The rules with `Plant` in them: [`Standard`]'s everywhere else.
    #[derive(Debug, Clone, Copy)]
    struct Planted(Plant);

    impl crate::cohort::sealed::Sealed for Planted {}

    impl SharedRules for Planted {
        fn leave_aborts(&self, left: usize) -> bool {
            self.0 != Plant::NoAbort && Standard.leave_aborts(left)
        }

        fn may_join(&self, bound: Bound, valid: bool, joins: u32, held: Duration) -> bool {
            match self.0 {
                Plant::JoinUnsure => Standard.may_join(bound, true, joins, held),
                Plant::NoCount => valid && held < bound.hold,
                _ => Standard.may_join(bound, valid, joins, held),
            }
        }

        fn open_after_close(&self, open: Option<BatchId>) -> Option<BatchId> {
            match self.0 {
                Plant::NoClose => open,
                _ => Standard.open_after_close(open),
            }
        }

        fn releases_node(&self, readers: u32) -> bool {
            self.0 != Plant::KeepIdle && Standard.releases_node(readers)
        }

        fn opens(&self, writers: u32) -> bool {
            self.0 == Plant::WriterIgnored || Standard.opens(writers)
        }
    }

    /// What the model knows of one node of the process on the server.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    struct ServerNode {
        /// When it was granted (ticks).
        since: u32,
        /// Readers that joined after the grant.
        joins: u32,
        /// The last local sequence given on it.
        last_local: u64,
        /// Closed by the model's own rules (time, unsure, `close`): no join from then on.
        closed: bool,
        /// Whether the grant's first readers have been given theirs (the grant itself).
        granted: bool,
    }

    /// The model's world around a cohort.
    #[derive(Debug, Clone)]
    struct World<R> {
        cohort: SharedCohort<u8, R>,
        /// Waiters that arrived and neither left nor got an answer: (model name, id).
        waiting: Vec<(u8, WaiterId)>,
        /// Readers holding: (name, node).
        readers: Vec<(u8, BatchId)>,
        /// Attempts started and not yet answered.
        attempts: Vec<AttemptId>,
        /// The process's nodes granted by the server and not yet released.
        server: BTreeMap<BatchId, ServerNode>,
        arrived: u8,
        ticks: u32,
        start: Instant,
        /// A local writer waits (the model's one writer).
        writer: bool,
    }

    #[derive(Debug, Clone, Copy)]
    enum Event {
        Arrive { valid: bool },
        Leave(u8),
        Held(AttemptId),
        Failed(AttemptId),
        Release(u8),
        Close,
        Tick,
        WriterWaits,
        WriterDone,
    }

    impl<R: SharedRules> World<R> {
        fn now(&self) -> Instant {
            self.start + Duration::from_millis(10 * u64::from(self.ticks))
        }

        fn apply(&mut self, effects: SharedEffects<u8>, joined: bool) -> Result<(), String> {
            let bound = self.cohort.bound();
            for (who, batch, local) in effects.grant {
                let ticks = self.ticks;
                let Some(node) = self.server.get_mut(&batch) else {
                    return Err(format!(
                        "{who} granted node {batch}, not held on the server"
                    ));
                };
                if local != node.last_local + 1 {
                    return Err(format!("local {local} after {}", node.last_local));
                }
                node.last_local = local;
                if joined {
                    // The model's own rules for a join.
                    if node.closed {
                        return Err(format!("{who} joined node {batch}, closed"));
                    }
                    node.joins += 1;
                    if node.joins > bound.handoffs {
                        return Err(format!("{} joins past the bound", node.joins));
                    }
                    if Duration::from_millis(10 * u64::from(ticks - node.since)) >= bound.hold {
                        return Err("a join past the bound's time".into());
                    }
                } else if node.granted {
                    return Err(format!("{who} granted node {batch} after its grant"));
                }
                self.waiting.retain(|(w, _)| *w != who);
                self.readers.push((who, batch));
            }
            if !joined {
                for node in self.server.values_mut() {
                    node.granted = true;
                }
            }
            for who in effects.fail {
                self.waiting.retain(|(w, _)| *w != who);
            }
            if let Some(batch) = effects.release_node {
                if self.readers.iter().any(|(_, b)| *b == batch) {
                    return Err(format!("node {batch} released while read"));
                }
                if self.server.remove(&batch).is_none() {
                    return Err(format!("node {batch} released, not held"));
                }
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
            for (who, batch) in &self.readers {
                if !self.server.contains_key(batch) {
                    return Err(format!("{who} reads on node {batch}, not held"));
                }
            }
            for batch in self.server.keys() {
                if !self.readers.iter().any(|(_, b)| b == batch) {
                    return Err(format!("node {batch} held with no reader"));
                }
            }
            if !self.waiting.is_empty() && c.attempt().is_none() {
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
            if c.waiting() != self.waiting.len() {
                return Err("the cohort's waiters and the model's differ".into());
            }
            if c.readers() != self.readers.len() as u64 {
                return Err("the cohort's readers and the model's differ".into());
            }
            Ok(())
        }
    }

    impl<R: SharedRules + Clone> Explore for World<R> {
        type Event = Event;

        fn key(&self) -> String {
            let c = &self.cohort;
            let batches: Vec<_> = c
                .batches
                .iter()
                .map(|(id, b)| {
                    (
                        *id,
                        b.since.duration_since(self.start),
                        b.joins,
                        b.readers,
                        b.local,
                    )
                })
                .collect();
            format!(
                "{:?}|{:?}|{:?}|{batches:?}|{:?}|{:?}|{:?}|{:?}|{}|{}|{}",
                c.waiters.keys().collect::<Vec<_>>(),
                c.taking,
                c.open,
                self.waiting,
                self.readers,
                self.attempts,
                self.server,
                self.arrived,
                self.ticks,
                self.writer
            )
        }

        fn events(&self, max_waiters: u8) -> Vec<Event> {
            let mut out = Vec::new();
            if self.arrived < max_waiters {
                out.push(Event::Arrive { valid: true });
                out.push(Event::Arrive { valid: false });
            }
            for &(w, _) in &self.waiting {
                out.push(Event::Leave(w));
            }
            for &a in &self.attempts {
                out.push(Event::Held(a));
                out.push(Event::Failed(a));
            }
            for &(w, _) in &self.readers {
                out.push(Event::Release(w));
            }
            out.push(Event::Close);
            out.push(Event::Tick);
            out.push(match self.writer {
                false => Event::WriterWaits,
                true => Event::WriterDone,
            });
            out
        }

        fn step(&mut self, event: Event) -> Result<(), String> {
            let now = self.now();
            match event {
                Event::Arrive { valid } => {
                    let name = self.arrived;
                    self.arrived += 1;
                    if !valid {
                        // The model's rule: a node that may be lost takes no one more.
                        for node in self.server.values_mut() {
                            node.closed = true;
                        }
                    }
                    let (id, effects) = self.cohort.arrive(name, valid, now);
                    if effects.grant.is_empty() {
                        self.waiting.push((name, id));
                    }
                    self.apply(effects, true)
                }
                Event::Leave(w) => {
                    let (_, id) = *self.waiting.iter().find(|(n, _)| *n == w).unwrap();
                    self.waiting.retain(|(n, _)| *n != w);
                    let effects = self.cohort.leave(id);
                    self.apply(effects, false)
                }
                Event::Held(a) => {
                    self.attempts.retain(|x| *x != a);
                    // The server granted the node: the process has it until it releases.
                    // When it is the current attempt's, every earlier node is closed to
                    // joins (the model's rule: newcomers go to the newest node only).
                    if self.cohort.attempt() == Some(a) {
                        for node in self.server.values_mut() {
                            node.closed = true;
                        }
                    }
                    // The model's rule: a node granted while a local writer waits takes no
                    // newcomer (it queued ahead of the writer's node).
                    self.server.insert(
                        a,
                        ServerNode {
                            since: self.ticks,
                            joins: 0,
                            last_local: 0,
                            closed: self.writer,
                            granted: false,
                        },
                    );
                    let effects = self.cohort.attempt_held(a, now);
                    self.apply(effects, false)
                }
                Event::Failed(a) => {
                    self.attempts.retain(|x| *x != a);
                    let effects = self.cohort.attempt_failed(a);
                    self.apply(effects, false)
                }
                Event::Release(w) => {
                    let i = self.readers.iter().position(|(n, _)| *n == w).unwrap();
                    let (_, batch) = self.readers.remove(i);
                    let effects = self.cohort.release(batch);
                    self.apply(effects, false)
                }
                Event::Close => {
                    for node in self.server.values_mut() {
                        node.closed = true;
                    }
                    self.cohort.close();
                    self.check()
                }
                Event::Tick => {
                    self.ticks += 1;
                    self.check()
                }
                Event::WriterWaits => {
                    self.writer = true;
                    for node in self.server.values_mut() {
                        node.closed = true;
                    }
                    self.cohort.writer_waits();
                    self.check()
                }
                Event::WriterDone => {
                    self.writer = false;
                    self.cohort.writer_done();
                    self.check()
                }
            }
        }
    }

    /// Every sequence of events to `depth` (states visited once) with a cohort deciding by
    /// `rules`, checking the invariants after each: the states explored, or the first
    /// violation found, with its trace.
    fn explore_with<R: SharedRules + Clone>(
        bound: Bound,
        max_waiters: u8,
        depth: usize,
        rules: R,
    ) -> Result<usize, String> {
        let start = Instant::now();
        let world = World {
            cohort: SharedCohort::with_rules(bound, rules),
            waiting: Vec::new(),
            readers: Vec::new(),
            attempts: Vec::new(),
            server: BTreeMap::new(),
            arrived: 0,
            ticks: 0,
            start,
            writer: false,
        };
        search::explore(world, max_waiters, depth)
    }

    fn small_bound() -> Bound {
        Bound {
            handoffs: 2,
            hold: Duration::from_millis(25),
        }
    }

    #[test]
    fn every_sequence_of_events_keeps_readers_on_held_nodes_and_no_stranded_waiter() {
        let states = explore_with(small_bound(), 4, 14, Standard).unwrap();
        eprintln!("{states} states");
        assert!(states > 10_000, "{states} states");
        let none = Bound {
            handoffs: 0,
            hold: Duration::ZERO,
        };
        assert!(explore_with(none, 3, 10, Standard).unwrap() > 500);
    }

    #[test]
    fn the_exploration_finds_each_planted_defect() {
        for (plant, finding) in [
            (Plant::NoAbort, "an attempt runs with nobody waiting"),
            (Plant::NoCount, "joins past the bound"),
            (Plant::JoinUnsure, "closed"),
            (Plant::NoClose, "closed"),
            (Plant::KeepIdle, "held with no reader"),
            (Plant::WriterIgnored, "closed"),
        ] {
            let found = explore_with(small_bound(), 4, 10, Planted(plant)).unwrap_err();
            assert!(found.contains(finding), "{plant:?}: {found}");
        }
    }

    #[test]
    fn readers_join_the_open_node_until_the_bound_then_take_a_new_one() {
        let t0 = Instant::now();
        let mut c = SharedCohort::new(Bound {
            handoffs: 2,
            hold: Duration::from_millis(50),
        });
        let (_, e) = c.arrive('a', true, t0);
        assert_eq!(e.start, Some(0));
        let (_, e) = c.arrive('b', true, t0);
        assert!(e.start.is_none() && e.grant.is_empty());
        // Both hold together on node 0.
        let e = c.attempt_held(0, t0);
        assert_eq!(e.grant, vec![('a', 0, 1), ('b', 0, 2)]);
        // Two join at once, with no request.
        for (w, local) in [('c', 3), ('d', 4)] {
            let (_, e) = c.arrive(w, true, t0);
            assert_eq!(e.grant, vec![(w, 0, local)]);
        }
        // The count is reached: `e` waits for a new node, node 0 stays with its readers.
        let (_, e) = c.arrive('e', true, t0);
        assert!(e.grant.is_empty() && e.start == Some(1));
        assert_eq!(c.open(), None);
        let e = c.attempt_held(1, t0);
        assert_eq!(e.grant, vec![('e', 1, 1)]);
        for _ in 0..3 {
            assert!(c.release(0).release_node.is_none());
        }
        assert_eq!(c.release(0).release_node, Some(0));
        // The time bound, an unsure node, and `close`.
        let (_, e) = c.arrive('f', true, t0 + Duration::from_millis(50));
        assert!(e.grant.is_empty() && e.start == Some(2));
        let e = c.attempt_held(2, t0);
        assert_eq!(e.grant, vec![('f', 2, 1)]);
        let (_, e) = c.arrive('g', false, t0);
        assert!(e.grant.is_empty() && e.start == Some(3));
        let e = c.attempt_held(3, t0);
        assert_eq!(e.grant, vec![('g', 3, 1)]);
        c.close();
        let (id, e) = c.arrive('h', true, t0);
        assert!(e.grant.is_empty() && e.start == Some(4));
        // The last waiter leaving aborts the attempt; its late node is released.
        assert_eq!(c.leave(id).abort, Some(4));
        assert_eq!(c.attempt_held(4, t0).release_node, Some(4));
        let e = c.attempt_failed(4);
        assert!(e.fail.is_empty());
    }
}
