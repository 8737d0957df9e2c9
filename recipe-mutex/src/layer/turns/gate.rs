//! [`Gate`]: one session and lock path's count of places taken by cleanups, and the queue of
//! attempts waiting for one. No runtime in it: a mutex and wakers from the crate's loom
//! facade, so that loom checks its rule on every interleaving (the `loom` test module).
//!
//! The rule, and why it bounds the nodes a cancelling program leaves behind:
//! - An attempt enters at once while fewer than the bound's places are taken and nobody
//!   waits ([`Ticket`] *free*: it takes no place while it runs).
//! - An attempt handed to the background ([`Ticket::abandon`]) takes a place until its cleanup
//!   is done (its ticket dropped).
//! - Otherwise an attempt queues ([`Entry`]); each place given back goes to the first in the
//!   queue (a *reserved* ticket, which keeps the place while it runs and, abandoned, until its
//!   cleanup is done), never to the whole queue at once. A waiter dropped after it was handed
//!   a place hands it on.
//!
//! So once the places are all taken, however many waiters arrive and are cancelled, the places
//! taken never grow: cleanups pending plus attempts let in since stay at the bound.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, PoisonError};
use std::task::{Context, Poll, Waker};

use crate::ids::IdMap;
use crate::loom::{AtomicBool, Mutex, MutexGuard, Ordering};

#[cfg(all(test, zk_loom))]
mod loom;

/// One session and lock path's places and queue.
#[derive(Debug)]
pub(crate) struct Gate {
    bound: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Places taken: abandoned attempts cleaning up, and reserved tickets.
    taken: usize,
    /// Waiters by id, with the waker of the task polling each.
    waiting: IdMap<u64, Option<Waker>>,
    /// Waiters' ids in arrival order; ids of waiters gone are skipped (and swept).
    order: VecDeque<u64>,
    /// Waiters handed a place they have not taken yet.
    handed: IdMap<u64, ()>,
    next_id: u64,
}

impl State {
    /// A place is given back: to the first waiter (returned, to be woken), or freed.
    fn give_back(&mut self) -> Option<Waker> {
        while let Some(id) = self.order.pop_front() {
            if let Some(waker) = self.waiting.remove(&id) {
                self.handed.insert(id, ());
                return waker;
            }
        }
        self.taken = self.taken.saturating_sub(1);
        None
    }
}

impl Gate {
    /// A gate with `bound` places.
    pub(crate) fn new(bound: usize) -> Self {
        Self {
            bound,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Places taken (cleanups pending and reserved tickets).
    pub(crate) fn taken(&self) -> usize {
        self.state().taken
    }

    /// Waits for a ticket (see the module docs). Cancel-safe: dropped while queued it leaves
    /// the queue, and a place it was handed goes on to the next waiter.
    pub(crate) fn enter(self: &Arc<Self>) -> Entry {
        Entry {
            gate: self.clone(),
            queued: None,
        }
    }

    /// A ticket's place is given back.
    fn give_back(&self) {
        let waker = self.state().give_back();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// A wait for a [`Ticket`], from [`Gate::enter`].
#[derive(Debug)]
pub(crate) struct Entry {
    gate: Arc<Gate>,
    /// Our id in the queue, once queued.
    queued: Option<u64>,
}

impl Future for Entry {
    type Output = Ticket;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Ticket> {
        let this = &mut *self;
        let mut state = this.gate.state();
        let reserved = match this.queued {
            None if state.taken < this.gate.bound && state.order.is_empty() => false,
            None => {
                let id = state.next_id;
                state.next_id += 1;
                state.waiting.insert(id, Some(cx.waker().clone()));
                state.order.push_back(id);
                // Waiters that left are swept once they are half the queue (amortized O(1)).
                if state.order.len() > 2 * state.waiting.len() + 16 {
                    let State { order, waiting, .. } = &mut *state;
                    order.retain(|id| waiting.contains_key(id));
                }
                this.queued = Some(id);
                return Poll::Pending;
            }
            Some(id) if state.handed.remove(&id).is_some() => true,
            Some(id) => {
                if let Some(slot) = state.waiting.get_mut(&id) {
                    match slot {
                        Some(w) if w.will_wake(cx.waker()) => {}
                        _ => *slot = Some(cx.waker().clone()),
                    }
                }
                return Poll::Pending;
            }
        };
        drop(state);
        this.queued = None;
        Poll::Ready(Ticket {
            gate: this.gate.clone(),
            reserved,
            abandoned: AtomicBool::new(false),
        })
    }
}

impl Entry {
    /// Leaves the queue, if queued: a place it was handed goes on by `give_back` (under the
    /// lock; the waker to wake once it is released). Once: the queue's id is taken.
    fn leave(&mut self, give_back: impl FnOnce(&mut State) -> Option<Waker>) {
        let Some(id) = self.queued.take() else {
            return;
        };
        let mut state = self.gate.state();
        if state.handed.remove(&id).is_some() {
            // Handed a place and gone without it: the next waiter gets it.
            let waker = give_back(&mut state);
            drop(state);
            if let Some(waker) = waker {
                waker.wake();
            }
        } else {
            state.waiting.remove(&id);
        }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        self.leave(State::give_back);
    }
}

/// An attempt's ticket, kept until the attempt is completely finished, background work
/// included. It takes a place at the gate if it was handed one (reserved) or once it is
/// abandoned, and gives it back when dropped.
#[derive(Debug)]
pub struct Ticket {
    gate: Arc<Gate>,
    reserved: bool,
    abandoned: AtomicBool,
}

impl Ticket {
    /// The attempt's cleanup goes on in the background: it takes a place until this ticket
    /// is dropped (a reserved ticket keeps the one it has). Idempotent.
    pub fn abandon(&self) {
        if !self.abandoned.swap(true, Ordering::AcqRel) && !self.reserved {
            self.gate.state().taken += 1;
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.reserved || self.abandoned.load(Ordering::Acquire) {
            self.gate.give_back();
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::task::Wake;

    struct Count(std::sync::atomic::AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn poll(entry: &mut Pin<Box<Entry>>, waker: &Waker) -> Option<Ticket> {
        match entry.as_mut().poll(&mut Context::from_waker(waker)) {
            Poll::Ready(t) => Some(t),
            Poll::Pending => None,
        }
    }

    /// Issue 34, defect 3: 16 waiters behind 4 pending cleanups. Each finished cleanup lets
    /// one in (all 16 went through on the first, and cancelled again they pushed the
    /// pending cleanups to 16 with 0 live attempts); cancelled, they leave the places at 4.
    #[test]
    fn sixteen_waiters_get_one_place_per_finished_cleanup() {
        let gate = Arc::new(Gate::new(4));
        let counter = Arc::new(Count(0.into()));
        let waker = Waker::from(counter.clone());
        let mut cleaning: Vec<Ticket> = (0..4)
            .map(|_| {
                let t = poll(&mut Box::pin(gate.enter()), &waker).expect("free");
                t.abandon();
                t
            })
            .collect();
        assert_eq!(gate.taken(), 4);
        let mut waiters: Vec<_> = (0..16).map(|_| Box::pin(gate.enter())).collect();
        assert!(waiters.iter_mut().all(|w| poll(w, &waker).is_none()));
        // One cleanup finishes: one waiter (the first) is woken and let in.
        drop(cleaning.pop());
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        let mut admitted = Vec::new();
        waiters.retain_mut(|w| match poll(w, &waker) {
            Some(t) => {
                admitted.push(t);
                false
            }
            None => true,
        });
        assert_eq!(admitted.len(), 1);
        assert_eq!(waiters.len(), 15);
        // Everything is cancelled: the one let in is abandoned, the others leave the queue.
        admitted.iter().for_each(Ticket::abandon);
        waiters.clear();
        assert_eq!(gate.taken(), 4, "pending cleanups stay at the bound");
        // The cleanups finish; the gate is free again, and a newcomer takes no place.
        cleaning.clear();
        admitted.clear();
        assert_eq!(gate.taken(), 0);
        let free = poll(&mut Box::pin(gate.enter()), &waker).expect("free");
        assert_eq!(gate.taken(), 0);
        drop(free);
        assert_eq!(gate.taken(), 0);
    }

    #[test]
    fn a_reserved_ticket_that_finishes_hands_its_place_on_and_newcomers_queue_behind() {
        let gate = Arc::new(Gate::new(1));
        let waker = Waker::from(Arc::new(Count(0.into())));
        let first = poll(&mut Box::pin(gate.enter()), &waker).expect("free");
        first.abandon();
        let mut a = Box::pin(gate.enter());
        let mut b = Box::pin(gate.enter());
        assert!(poll(&mut a, &waker).is_none());
        assert!(poll(&mut b, &waker).is_none());
        drop(first);
        // `a` was handed the place; a newcomer does not jump the queue.
        let mut c = Box::pin(gate.enter());
        assert!(poll(&mut c, &waker).is_none());
        let ta = poll(&mut a, &waker).expect("handed");
        assert!(poll(&mut b, &waker).is_none());
        // `a` held and finished (not abandoned): its place goes to `b`.
        drop(ta);
        assert_eq!(gate.taken(), 1);
        // `b` is dropped before it takes the place: it goes on to `c`.
        drop(b);
        let tc = poll(&mut c, &waker).expect("handed on");
        assert_eq!(gate.taken(), 1);
        drop(tc);
        assert_eq!(gate.taken(), 0);
    }

    #[test]
    fn waiters_that_leave_are_swept_from_the_queue() {
        let gate = Arc::new(Gate::new(1));
        let waker = Waker::from(Arc::new(Count(0.into())));
        let t = poll(&mut Box::pin(gate.enter()), &waker).expect("free");
        t.abandon();
        for _ in 0..10_000 {
            let mut w = Box::pin(gate.enter());
            assert!(poll(&mut w, &waker).is_none());
        }
        assert!(gate.state().order.len() <= 17);
        drop(t);
        assert_eq!(gate.taken(), 0);
    }
}
