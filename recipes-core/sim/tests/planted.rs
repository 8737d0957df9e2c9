//! Proof that the simulator can fail: deliberately broken machines are caught, each within a
//! bounded number of schedules, while the real ones pass the same schedules.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::time::Instant;

use bytes::Bytes;
use recipes_core::{
    AcquireMachine, Cleanup, Connection, Exclusive, Held, Input, Machine, MaxLeases, Op, Outcome,
    Predicate, Reply, SemaphoreMachine, WatchEvent,
};
use zk_sim::recipe::BoxedAttempt;
use zk_sim::{Config, HoldKind, Recipe, Violation, sweep};

/// How many schedules a planted bug may take to be caught.
const BOUND: u64 = 3_000;

/// How many schedules per recipe the suite runs with the real machines (the long sweeps are
/// `cargo xtask sim --schedules N`).
const SUITE_SCHEDULES: u64 = 400;

/// The first driver's hand-off shortcut: the second in line holds on its predecessor's
/// deletion, without listing again.
struct Shortcut {
    inner: AcquireMachine<Exclusive>,
    ours: Option<Held>,
    second: bool,
    watched: Option<String>,
    forced: Option<Outcome<Held>>,
}

impl Machine for Shortcut {
    type Output = Held;
    fn handle(&mut self, now: Instant, input: Input) {
        if self.forced.is_some() {
            return;
        }
        match &input {
            Input::Reply(Reply::Created { path, czxid }) => {
                self.ours = Some(Held {
                    path: path.clone(),
                    czxid: *czxid,
                });
            }
            Input::Reply(Reply::Children(kids)) => {
                let mut kids = kids.clone();
                Exclusive::mutex().sort(&mut kids);
                let name = self.ours.as_ref().and_then(|h| h.path.rsplit('/').next());
                self.second = name.is_some_and(|n| kids.get(1).is_some_and(|k| k == n));
            }
            Input::Watch {
                path,
                event: WatchEvent::Deleted,
                ..
            } if self.second && self.watched.as_ref() == Some(path) => {
                if let Some(h) = self.ours.clone() {
                    self.forced = Some(Outcome::Held(h));
                    return;
                }
            }
            _ => {}
        }
        self.inner.handle(now, input);
    }
    fn poll_op(&mut self) -> Option<Op> {
        let op = self.inner.poll_op();
        if let Some(Op::GetData { path, watch: true }) = &op {
            self.watched = Some(path.clone());
        }
        op
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.inner.poll_timeout()
    }
    fn outcome(&self) -> Option<&Outcome<Held>> {
        self.forced.as_ref().or(self.inner.outcome())
    }
    fn cleanups(&self) -> Vec<Cleanup> {
        match self.forced {
            Some(_) => Vec::new(),
            None => self.inner.cleanups(),
        }
    }
}

fn real(base: &str, uuid: &str, deadline: Option<Instant>) -> AcquireMachine<Exclusive> {
    AcquireMachine::new(base, Exclusive::mutex(), uuid, Bytes::new(), deadline)
}

fn shortcut(
    _: HoldKind,
    _: u32,
    base: &str,
    uuid: &str,
    deadline: Option<Instant>,
) -> BoxedAttempt {
    zk_sim::recipe::single(Shortcut {
        inner: real(base, uuid, deadline),
        ours: None,
        second: false,
        watched: None,
        forced: None,
    })
}

/// Forgets what it owes: an abandoned or failed attempt (a lost create reply among them)
/// leaves its node behind.
struct Forgetful(AcquireMachine<Exclusive>);

impl Machine for Forgetful {
    type Output = Held;
    fn handle(&mut self, now: Instant, input: Input) {
        self.0.handle(now, input);
    }
    fn poll_op(&mut self) -> Option<Op> {
        self.0.poll_op()
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.0.poll_timeout()
    }
    fn outcome(&self) -> Option<&Outcome<Held>> {
        self.0.outcome()
    }
    fn cleanups(&self) -> Vec<Cleanup> {
        Vec::new()
    }
}

fn forgetful(
    _: HoldKind,
    _: u32,
    base: &str,
    uuid: &str,
    deadline: Option<Instant>,
) -> BoxedAttempt {
    zk_sim::recipe::single(Forgetful(real(base, uuid, deadline)))
}

/// Never hears that the connection came back: waits forever after a connection loss.
struct Deaf(AcquireMachine<Exclusive>);

impl Machine for Deaf {
    type Output = Held;
    fn handle(&mut self, now: Instant, input: Input) {
        if input != Input::Connection(Connection::Connected) {
            self.0.handle(now, input);
        }
    }
    fn poll_op(&mut self) -> Option<Op> {
        self.0.poll_op()
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.0.poll_timeout()
    }
    fn outcome(&self) -> Option<&Outcome<Held>> {
        self.0.outcome()
    }
    fn cleanups(&self) -> Vec<Cleanup> {
        self.0.cleanups()
    }
}

fn deaf(_: HoldKind, _: u32, base: &str, uuid: &str, deadline: Option<Instant>) -> BoxedAttempt {
    zk_sim::recipe::single(Deaf(real(base, uuid, deadline)))
}

/// Counts against one lease more than the semaphore has.
fn overcounting(
    kind: HoldKind,
    qty: u32,
    base: &str,
    uuid: &str,
    deadline: Option<Instant>,
) -> BoxedAttempt {
    let HoldKind::Lease { max } = kind else {
        panic!("not a semaphore");
    };
    Box::new(SemaphoreMachine::new(
        base,
        qty,
        MaxLeases::new(max + 1),
        uuid,
        Bytes::new(),
        deadline,
    ))
}

/// Never releases the inner lock once it holds its leases.
struct KeepsInner(SemaphoreMachine);

impl Machine for KeepsInner {
    type Output = Vec<Held>;
    fn handle(&mut self, now: Instant, input: Input) {
        self.0.handle(now, input);
    }
    fn poll_op(&mut self) -> Option<Op> {
        self.0.poll_op()
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.0.poll_timeout()
    }
    fn outcome(&self) -> Option<&Outcome<Vec<Held>>> {
        self.0.outcome()
    }
    fn cleanups(&self) -> Vec<Cleanup> {
        self.0.cleanups()
    }
}

fn keeps_inner(
    kind: HoldKind,
    qty: u32,
    base: &str,
    uuid: &str,
    deadline: Option<Instant>,
) -> BoxedAttempt {
    let max = match kind {
        HoldKind::Lease { max } => max,
        _ => 1,
    };
    let m = SemaphoreMachine::new(base, qty, MaxLeases::new(max), uuid, Bytes::new(), deadline);
    Box::new(KeepsInner(m))
}

fn caught(factory: zk_sim::Factory, what: &str) -> Violation {
    caught_in(Recipe::Mutex, factory, what)
}

fn caught_in(recipe: Recipe, factory: zk_sim::Factory, what: &str) -> Violation {
    let config = Config::new(recipe);
    match sweep(BOUND, 1, config, factory) {
        Ok(stats) => panic!("{what} not caught in {BOUND} schedules ({stats:?})"),
        Err(failure) => {
            eprintln!(
                "FIGURE planted {what}: caught at seed {}: {}",
                failure.seed, failure.violation
            );
            failure.violation
        }
    }
}

#[test]
fn the_hand_off_shortcut_is_caught() {
    let v = caught(shortcut, "hand-off shortcut");
    assert!(matches!(v, Violation::Exclusion(_)), "{v}");
}

#[test]
fn a_machine_that_forgets_its_node_is_caught() {
    let v = caught(forgetful, "forgotten node");
    assert!(
        matches!(
            v,
            Violation::Turn(_) | Violation::Orphans(_) | Violation::Unfinished(_)
        ),
        "{v}"
    );
}

#[test]
fn a_machine_that_misses_the_reconnect_is_caught() {
    let v = caught(deaf, "missed reconnect");
    assert!(matches!(v, Violation::Stuck(_)), "{v}");
}

#[test]
fn a_semaphore_that_counts_one_lease_too_many_is_caught() {
    for recipe in [Recipe::SemaphoreMutex, Recipe::Semaphore { leases: 2 }] {
        let v = caught_in(recipe, overcounting, "over-counting semaphore");
        assert!(matches!(v, Violation::Exclusion(_)), "{v}");
    }
}

#[test]
fn a_semaphore_that_keeps_its_inner_lock_is_caught() {
    let v = caught_in(
        Recipe::Semaphore { leases: 2 },
        keeps_inner,
        "kept inner lock",
    );
    assert!(
        matches!(v, Violation::Orphans(_) | Violation::Unfinished(_)),
        "{v}"
    );
}

#[test]
fn the_real_machines_pass_the_same_schedules() {
    for recipe in Recipe::ALL {
        let stats = sweep(SUITE_SCHEDULES, 1, Config::new(recipe), recipe.factory())
            .unwrap_or_else(|f| panic!("{}: {f}", recipe.name()));
        assert!(stats.holds > 0);
    }
}
