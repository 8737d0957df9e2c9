//! loom models of the turns gate: every interleaving of cleanups finishing, waiters arriving,
//! being handed a place and being dropped, up to a bounded number of preemptions
//! ([`PREEMPTIONS`](crate::loom::model::PREEMPTIONS), or `LOOM_MAX_PREEMPTIONS`).
//!
//! - Built only with our own cfg, `--cfg zk_loom`, in release: the test filter `loom` of
//!   `cargo test -p recipe-mutex --lib --release` runs them.
//! - The invariants: a waiter handed a place is woken (no lost wake-up: loom reports a
//!   deadlock otherwise); the places taken never exceed the bound, and a waiter let in takes
//!   the place a finished cleanup gave back (no newcomer passes beside it); a waiter dropped
//!   after it was handed a place hands it on.
//! - Each model ships with a [`Plant`] that breaks it, and a test that loom finds the failure.
//!   The plants live here, in wrappers the gate does not know about: a pending cleanup
//!   ([`Cleanup`]) and a queued waiter ([`Waiter`]) that give their place back the planted way.

#![allow(clippy::unwrap_used)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use ::loom::future::block_on;
use ::loom::thread;

use super::{Entry, Gate, State, Ticket};
use crate::loom::model::{check, fails};

/// A defect planted in a place given back (the loom models only), each breaking one model's
/// invariant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plant {
    /// A place given back is handed to the first waiter, who is not woken.
    HandUnwoken,
    /// A place given back is handed to the first waiter and freed as well (the old gate's
    /// leak: one finished cleanup let more than one attempt in).
    FreeWhenHanding,
}

impl Plant {
    /// Gives a place back under the lock, the gate's own step and then the defect: the waker
    /// to wake once the lock is released.
    fn give_back(self, state: &mut State) -> Option<Waker> {
        let waker = state.give_back();
        match self {
            Plant::HandUnwoken => None,
            Plant::FreeWhenHanding => {
                if waker.is_some() {
                    state.taken -= 1;
                }
                waker
            }
        }
    }
}

fn gate(bound: usize) -> Arc<Gate> {
    Arc::new(Gate::new(bound))
}

/// A pending cleanup: a ticket taken at once (the gate has a free place) and abandoned, or,
/// with a plant, the place it takes, given back the planted way when dropped.
enum Cleanup {
    Abandoned { _ticket: Ticket },
    Planted(Arc<Gate>, Plant),
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Cleanup::Planted(gate, plant) = self {
            let waker = plant.give_back(&mut gate.state());
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }
}

fn cleanup(gate: &Arc<Gate>, plant: Option<Plant>) -> Cleanup {
    let ticket = poll_once(&mut Box::pin(gate.enter())).expect("a free place");
    let Some(plant) = plant else {
        ticket.abandon();
        return Cleanup::Abandoned { _ticket: ticket };
    };
    // What abandoning a free ticket does, the ticket itself dropped unabandoned.
    drop(ticket);
    gate.state().taken += 1;
    Cleanup::Planted(gate.clone(), plant)
}

/// A waiter polled once; with a plant, dropped, it leaves the queue the planted way.
struct Waiter {
    entry: Pin<Box<Entry>>,
    plant: Option<Plant>,
}

impl Waiter {
    fn new(gate: &Arc<Gate>, plant: Option<Plant>) -> Self {
        Waiter {
            entry: Box::pin(gate.enter()),
            plant,
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if let Some(plant) = self.plant {
            self.entry.leave(|state| plant.give_back(state));
        }
    }
}

/// Polls once with a waker that does nothing.
fn poll_once(entry: &mut Pin<Box<Entry>>) -> Option<Ticket> {
    match entry.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(ticket) => Some(ticket),
        Poll::Pending => None,
    }
}

/// (a) A cleanup finishes on another thread while a waiter awaits its turn and a newcomer
/// tries once on a third: the waiter gets in and is woken (a lost wake-up is a deadlock loom
/// reports), and the places taken never exceed the bound.
fn hand_off(plant: Option<Plant>) -> impl Fn() + Sync + Send + 'static {
    move || {
        let gate = gate(1);
        let pending = cleanup(&gate, plant);
        let finisher = thread::spawn(move || drop(pending));
        let newcomer = {
            let gate = gate.clone();
            thread::spawn(move || {
                let ticket = poll_once(&mut Box::pin(gate.enter()));
                assert!(gate.taken() <= 1, "more places taken than the bound");
                drop(ticket);
            })
        };
        let ticket = block_on(gate.enter());
        assert!(gate.taken() <= 1, "more places taken than the bound");
        drop(ticket);
        finisher.join().unwrap();
        newcomer.join().unwrap();
        assert_eq!(gate.taken(), 0, "a place never given back");
    }
}

/// (b) A waiter is dropped while a cleanup finishes: if it was handed the place, it hands it
/// on, so the waiter behind it still gets in.
fn dropped_waiter(plant: Option<Plant>) -> impl Fn() + Sync + Send + 'static {
    move || {
        let gate = gate(1);
        let pending = cleanup(&gate, plant);
        let mut first = Waiter::new(&gate, plant);
        assert!(poll_once(&mut first.entry).is_none(), "the place is taken");
        let dropper = thread::spawn(move || drop(first));
        let finisher = thread::spawn(move || drop(pending));
        let ticket = block_on(gate.enter());
        dropper.join().unwrap();
        finisher.join().unwrap();
        // It holds the place it was handed, or entered freely once the place was free.
        assert!(gate.taken() <= 1, "more places taken than the bound");
        drop(ticket);
        assert_eq!(gate.taken(), 0);
    }
}

/// (c) A waiter queued behind a cleanup that finishes while a newcomer arrives: the
/// newcomer never passes at once (the place went to the waiter), and the places taken never
/// exceed the bound.
fn no_barging(plant: Option<Plant>) -> impl Fn() + Sync + Send + 'static {
    move || {
        let gate = gate(1);
        let pending = cleanup(&gate, plant);
        let mut waiter = Waiter::new(&gate, plant);
        assert!(poll_once(&mut waiter.entry).is_none(), "the place is taken");
        let finisher = thread::spawn(move || drop(pending));
        let mut newcomer = Waiter::new(&gate, plant);
        let passed = poll_once(&mut newcomer.entry);
        assert!(passed.is_none(), "a newcomer passed beside a waiter");
        assert!(gate.taken() <= 1, "more places taken than the bound");
        finisher.join().unwrap();
        drop((newcomer, waiter));
        assert_eq!(gate.taken(), 0);
    }
}

#[test]
fn each_finished_cleanup_lets_one_waiter_in_and_wakes_it() {
    assert!(check(hand_off(None)) > 1);
}

#[test]
fn a_dropped_waiter_hands_its_place_on() {
    assert!(check(dropped_waiter(None)) > 1);
}

#[test]
fn a_newcomer_never_passes_a_waiter_handed_a_place() {
    assert!(check(no_barging(None)) > 1);
}

#[test]
fn a_waiter_handed_a_place_unwoken_is_found() {
    fails(hand_off(Some(Plant::HandUnwoken)), "deadlock");
}

#[test]
fn a_place_handed_on_unwoken_is_found() {
    fails(dropped_waiter(Some(Plant::HandUnwoken)), "deadlock");
}

#[test]
fn a_place_both_handed_and_freed_is_found() {
    fails(
        no_barging(Some(Plant::FreeWhenHanding)),
        "a newcomer passed beside a waiter",
    );
}
