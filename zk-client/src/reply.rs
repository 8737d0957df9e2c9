//! Replies to callers without an allocation per request: each request in flight has a slot in
//! its session's [`Replies`] pool, which the session task fills through a [`ReplySender`] and
//! the caller empties through a [`ReplyFuture`] (what a oneshot channel does, with the slots
//! reused instead of one allocated per request).
//!
//! A slot is reused only when both sides are done with it: the sender has sent or was dropped
//! (the session task is gone), and the future has taken the reply or was dropped (the caller
//! gave up). Wakers are woken after the pool's lock is released.
//!
//! loom checks this in every interleaving of the two ends (the `loom` test module, under
//! `--cfg zk_loom`; the pool's lock is the crate's loom facade's).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, PoisonError};
use std::task::{Context, Poll, Waker};

use crate::loom::{Mutex, MutexGuard};

#[cfg(all(test, zk_loom))]
mod loom;

/// Above this many slots, a pool whose slots are all free again gives its memory back (a burst
/// of thousands of waiters does not keep its peak for the session's life).
const KEEP_SLOTS: usize = 64;

/// One session's reply slots.
pub(crate) struct Replies<T> {
    slots: Mutex<Slots<T>>,
}

impl<T> std::fmt::Debug for Replies<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let slots = self.lock();
        f.debug_struct("Replies")
            .field("slots", &slots.states.len())
            .field("free", &slots.free.len())
            .finish()
    }
}

struct Slots<T> {
    states: Vec<State<T>>,
    /// Indices of free slots.
    free: Vec<usize>,
}

enum State<T> {
    Free,
    /// No reply yet; the waker of the task awaiting it.
    Waiting(Option<Waker>),
    /// The reply, not yet taken.
    Ready(T),
    /// The sender was dropped without sending.
    SenderGone,
    /// The future was dropped before its reply.
    ReceiverGone,
}

impl<T> Replies<T> {
    pub(crate) fn new() -> Self {
        Self {
            slots: Mutex::new(Slots {
                states: Vec::new(),
                free: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Slots<T>> {
        // Nothing panics while the lock is held (wakers are woken after it is released).
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A slot for one reply: the session task's end and the caller's.
    pub(crate) fn open(self: &Arc<Self>) -> (ReplySender<T>, ReplyFuture<T>) {
        let mut slots = self.lock();
        let index = match slots.free.pop() {
            Some(index) => index,
            None => {
                slots.states.push(State::Free);
                slots.states.len() - 1
            }
        };
        if let Some(state) = slots.states.get_mut(index) {
            *state = State::Waiting(None);
        }
        drop(slots);
        (
            ReplySender {
                replies: self.clone(),
                index: Some(index),
            },
            ReplyFuture {
                replies: self.clone(),
                index: Some(index),
            },
        )
    }

    /// Ends slot `index` and frees it, returning what it held: for the last of its two ends
    /// to finish. A pool whose slots are then all free gives its memory back (beyond
    /// [`KEEP_SLOTS`]).
    fn take(slots: &mut Slots<T>, index: usize) -> State<T> {
        let old = match slots.states.get_mut(index) {
            Some(state) => std::mem::replace(state, State::Free),
            // Unreachable: a slot is never removed while an end holds its index.
            None => return State::Free,
        };
        slots.free.push(index);
        if slots.states.len() > KEEP_SLOTS && slots.free.len() == slots.states.len() {
            *slots = Slots {
                states: Vec::new(),
                free: Vec::new(),
            };
        }
        old
    }

    /// How many slots the pool holds (tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().states.len()
    }
}

/// The session task's end of a reply slot.
pub(crate) struct ReplySender<T> {
    replies: Arc<Replies<T>>,
    index: Option<usize>,
}

impl<T> std::fmt::Debug for ReplySender<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplySender")
            .field("index", &self.index)
            .finish()
    }
}

impl<T> ReplySender<T> {
    /// Hands the reply over and wakes the caller; a caller gone drops it.
    pub(crate) fn send(mut self, value: T) {
        if let Some(index) = self.index.take() {
            self.finish(index, Some(value));
        }
    }

    fn finish(&self, index: usize, value: Option<T>) {
        let mut slots = self.replies.lock();
        let waker = match slots.states.get_mut(index) {
            Some(state @ State::Waiting(_)) => {
                let next = match value {
                    Some(value) => State::Ready(value),
                    None => State::SenderGone,
                };
                match std::mem::replace(state, next) {
                    State::Waiting(waker) => waker,
                    _ => None,
                }
            }
            // The caller is gone: the slot is freed, the reply dropped (outside the lock).
            _ => {
                Replies::take(&mut slots, index);
                drop(slots);
                drop(value);
                return;
            }
        };
        drop(slots);
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl<T> Drop for ReplySender<T> {
    fn drop(&mut self) {
        if let Some(index) = self.index.take() {
            self.finish(index, None);
        }
    }
}

/// The caller's end of a reply slot: the reply, or `None` if the session task dropped the
/// sender without sending one.
pub(crate) struct ReplyFuture<T> {
    replies: Arc<Replies<T>>,
    /// `None` once the reply was taken.
    index: Option<usize>,
}

impl<T> std::fmt::Debug for ReplyFuture<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplyFuture")
            .field("index", &self.index)
            .finish()
    }
}

impl<T> Future for ReplyFuture<T> {
    type Output = Option<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let Some(index) = self.index else {
            // Polled after completion: the reply was taken.
            return Poll::Ready(None);
        };
        let mut slots = self.replies.lock();
        if let Some(State::Waiting(waker)) = slots.states.get_mut(index) {
            if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *waker = Some(cx.waker().clone());
            }
            return Poll::Pending;
        }
        // A reply, or the sender gone: this end finishes last.
        let old = Replies::take(&mut slots, index);
        drop(slots);
        self.index = None;
        match old {
            State::Ready(value) => Poll::Ready(Some(value)),
            _ => Poll::Ready(None),
        }
    }
}

impl<T> Drop for ReplyFuture<T> {
    fn drop(&mut self) {
        if let Some(index) = self.index.take() {
            let mut slots = self.replies.lock();
            let old = match slots.states.get_mut(index) {
                Some(state @ State::Waiting(_)) => {
                    *state = State::ReceiverGone;
                    return;
                }
                // The sender has finished: this end is the last.
                _ => Replies::take(&mut slots, index),
            };
            drop(slots);
            // A reply not taken is dropped outside the lock.
            drop(old);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn poll<T>(f: &mut ReplyFuture<T>, waker: &Waker) -> Poll<Option<T>> {
        Pin::new(f).poll(&mut Context::from_waker(waker))
    }

    #[test]
    fn a_reply_reaches_its_future_and_wakes_it_once() {
        let replies = Arc::new(Replies::new());
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let (tx, mut rx) = replies.open();
        assert!(poll(&mut rx, &waker).is_pending());
        assert!(poll(&mut rx, &waker).is_pending());
        tx.send(7);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(poll(&mut rx, &waker), Poll::Ready(Some(7)));
        drop(rx);
        // The slot is reused.
        let (_tx, _rx) = replies.open();
        assert_eq!(replies.len(), 1);
    }

    #[test]
    fn a_sender_dropped_unsent_gives_none() {
        let replies = Arc::new(Replies::<u8>::new());
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let (tx, mut rx) = replies.open();
        assert!(poll(&mut rx, &waker).is_pending());
        drop(tx);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(poll(&mut rx, &waker), Poll::Ready(None));
    }

    #[test]
    fn every_order_of_the_two_ends_frees_the_slot_and_drops_the_reply() {
        // Each end finishes by sending/taking or by being dropped, in either order; the
        // reply (an Arc, to see it dropped) is never leaked and the slot is always reused.
        let replies = Arc::new(Replies::<Arc<()>>::new());
        let waker = Waker::from(Arc::new(Count(AtomicUsize::new(0))));
        let value = Arc::new(());
        for case in 0..8 {
            let (tx, mut rx) = replies.open();
            let (sends, takes, sender_first) = (case & 1 == 1, case & 2 == 2, case & 4 == 4);
            let sender = |tx: ReplySender<Arc<()>>| {
                if sends {
                    tx.send(value.clone());
                } else {
                    drop(tx);
                }
            };
            if sender_first {
                sender(tx);
                if takes {
                    let got = poll(&mut rx, &waker);
                    assert_eq!(got.map(|v| v.is_some()), Poll::Ready(sends));
                }
                drop(rx);
            } else {
                if takes {
                    assert!(poll(&mut rx, &waker).is_pending());
                }
                drop(rx);
                sender(tx);
            }
            assert_eq!(Arc::strong_count(&value), 1, "case {case}");
            assert_eq!(replies.len(), 1, "case {case}");
        }
    }

    #[test]
    fn a_burst_gives_its_memory_back_once_every_slot_is_free() {
        let replies = Arc::new(Replies::<u32>::new());
        let ends: Vec<_> = (0..1000).map(|_| replies.open()).collect();
        assert_eq!(replies.len(), 1000);
        for (i, (tx, rx)) in ends.into_iter().enumerate() {
            tx.send(i as u32);
            drop(rx);
        }
        assert_eq!(replies.len(), 0);
    }
}
