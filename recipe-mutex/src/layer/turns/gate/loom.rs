//! loom models of the turns gate: every interleaving of cleanups finishing, waiters arriving,
//! being handed a place and being dropped, up to a bounded number of preemptions
//! ([`PREEMPTIONS`](crate::loom_check::PREEMPTIONS), or `LOOM_MAX_PREEMPTIONS`).
//!
//! Built only with our own cfg, in a target dir of its own, in release (see `.ci/run`):
//!
//! ```text
//! RUSTFLAGS="--cfg zk_loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p recipe-mutex --lib --release turns::gate::loom
//! ```
//!
//! The invariants: a waiter handed a place is woken (no lost wake-up: loom reports a
//! deadlock otherwise); the places taken never exceed the bound, and a waiter let in takes the
//! place a finished cleanup gave back (no newcomer passes beside it); a waiter dropped after it
//! was handed a place hands it on. Each model ships with a [`Plant`] that breaks it, and a test
//! that loom finds the failure.

#![allow(clippy::unwrap_used)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use ::loom::future::block_on;
use ::loom::thread;

use super::{Gate, State, Ticket};
use crate::loom_check::{check, fails};

/// A defect planted in a gate (the loom models only), each breaking one model's invariant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Plant {
    /// A place given back is handed to the first waiter, who is not woken.
    HandUnwoken,
    /// A place given back is handed to the first waiter and freed as well (the old gate's
    /// leak: one finished cleanup let more than one attempt in).
    FreeWhenHanding,
}

/// The planted ways to give a place back (`state.give_back()` has run): the waker to wake.
pub(super) fn planted_give_back(
    gate: &Gate,
    state: &mut State,
    waker: Option<Waker>,
) -> Option<Waker> {
    match gate.plant {
        Some(Plant::HandUnwoken) => None,
        Some(Plant::FreeWhenHanding) if waker.is_some() => {
            state.taken -= 1;
            waker
        }
        _ => waker,
    }
}

fn planted(bound: usize, plant: Option<Plant>) -> Arc<Gate> {
    Arc::new(Gate {
        plant,
        ..Gate::new(bound)
    })
}

/// A ticket taken at once (the gate has a free place), then abandoned: a pending cleanup.
fn cleanup(gate: &Arc<Gate>) -> Ticket {
    let ticket = poll_once(&mut Box::pin(gate.enter())).expect("a free place");
    ticket.abandon();
    ticket
}

/// Polls once with a waker that does nothing.
fn poll_once(entry: &mut Pin<Box<super::Entry>>) -> Option<Ticket> {
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
        let gate = planted(1, plant);
        let pending = cleanup(&gate);
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
        let gate = planted(1, plant);
        let pending = cleanup(&gate);
        let mut first = Box::pin(gate.enter());
        assert!(poll_once(&mut first).is_none(), "the place is taken");
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
        let gate = planted(1, plant);
        let pending = cleanup(&gate);
        let mut waiter = Box::pin(gate.enter());
        assert!(poll_once(&mut waiter).is_none(), "the place is taken");
        let finisher = thread::spawn(move || drop(pending));
        let mut newcomer = Box::pin(gate.enter());
        let passed = poll_once(&mut newcomer);
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
