//! loom models of the reply slots: every interleaving of the session task's end and the
//! caller's, up to a bounded number of preemptions ([`PREEMPTIONS`], or `LOOM_MAX_PREEMPTIONS`).
//!
//! Built only with our own cfg (tokio has its own `cfg(loom)`, which `--cfg loom` would turn on
//! in tokio too), in a target dir of their own (the cfg rebuilds every crate), in release:
//!
//! ```text
//! RUSTFLAGS="--cfg zk_loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p zk-client --lib --release reply::loom
//! ```
//!
//! The invariants: a reply reaches its own future and no other, even once its slot is reused;
//! a slot is reused only when both ends are done with it (each slot on the free list once, all
//! free at the end); nothing leaks (the replies are `Arc`s whose counts are checked, the
//! wakers loom's, which loom checks); an awaited future is woken when its reply or the
//! sender's end lands, whatever came first. Each model ships with a [`Plant`] that breaks its
//! invariant, and a test that loom finds the failure; the plants live here, in ends that wrap
//! the pool's ([`Pool`]), which the pool does not know about.

#![allow(clippy::unwrap_used)]

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use ::loom::future::block_on;
use ::loom::model::Builder;
use ::loom::thread;

use super::{Replies, ReplyFuture, ReplySender, State};

/// Preemptions explored per interleaving unless `LOOM_MAX_PREEMPTIONS` says otherwise.
const PREEMPTIONS: usize = 3;

/// A defect planted in a pool (the loom models only), each breaking one model's invariant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Plant {
    /// The sender takes the waiting future's waker and wakes it, then stores the reply in a
    /// second lock section: a poll in between registers a waker that is never woken.
    WakeBeforeReply,
    /// The sender, dropped unsent, marks its slot without waking the waiting future.
    SenderGoneUnwoken,
    /// A future dropped before its reply frees its slot at once, while the sender may still
    /// send: a slot reused when only one end is done.
    FreeOnOneEnd,
}

/// The sender's planted ways to finish: `None` when the plant finished it, else the value to
/// finish it with as the code does.
fn planted_finish<T>(
    sender: &ReplySender<T>,
    plant: Option<Plant>,
    index: usize,
    value: Option<T>,
) -> Option<Option<T>> {
    match plant {
        Some(Plant::WakeBeforeReply) => {
            let mut slots = sender.replies.lock();
            let Some(State::Waiting(waker)) = slots.states.get_mut(index) else {
                return Some(value);
            };
            let waker = waker.take();
            drop(slots);
            if let Some(waker) = waker {
                waker.wake();
            }
            let mut slots = sender.replies.lock();
            let Some(state @ State::Waiting(_)) = slots.states.get_mut(index) else {
                return Some(value);
            };
            // The waker registered since is dropped, not woken.
            *state = match value {
                Some(value) => State::Ready(value),
                None => State::SenderGone,
            };
            None
        }
        Some(Plant::SenderGoneUnwoken) if value.is_none() => {
            let mut slots = sender.replies.lock();
            let Some(state @ State::Waiting(_)) = slots.states.get_mut(index) else {
                return Some(value);
            };
            *state = State::SenderGone;
            None
        }
        _ => Some(value),
    }
}

/// A pool as the models use it: a wrapper the pool does not know about, whose ends finish
/// as the code does or, with `plant`, the planted way.
struct Pool<T> {
    replies: Arc<Replies<T>>,
    plant: Option<Plant>,
}

impl<T> Pool<T> {
    fn new(plant: Option<Plant>) -> Self {
        Self {
            replies: Arc::new(Replies::new()),
            plant,
        }
    }

    /// [`Replies::open`], each end wrapped.
    fn open(&self) -> (Sender<T>, Receiver<T>) {
        let (sender, future) = self.replies.open();
        (
            Sender {
                inner: sender,
                plant: self.plant,
            },
            Receiver {
                inner: future,
                plant: self.plant,
            },
        )
    }

    fn free_but(&self, busy: usize) -> usize {
        self.replies.free_but(busy)
    }
}

/// A [`ReplySender`] that finishes the planted way (the wrapped one is left with nothing
/// to finish).
struct Sender<T> {
    inner: ReplySender<T>,
    plant: Option<Plant>,
}

impl<T> Sender<T> {
    fn send(mut self, value: T) {
        if let Some(index) = self.inner.index.take() {
            self.finish(index, Some(value));
        }
    }

    fn finish(&self, index: usize, value: Option<T>) {
        if let Some(value) = planted_finish(&self.inner, self.plant, index, value) {
            self.inner.finish(index, value);
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if let Some(index) = self.inner.index.take() {
            self.finish(index, None);
        }
    }
}

/// A [`ReplyFuture`] that, dropped with [`Plant::FreeOnOneEnd`], frees its slot at once.
struct Receiver<T> {
    inner: ReplyFuture<T>,
    plant: Option<Plant>,
}

impl<T> Future for Receiver<T> {
    type Output = Option<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        Pin::new(&mut self.inner).poll(cx)
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        if self.plant != Some(Plant::FreeOnOneEnd) {
            return;
        }
        if let Some(index) = self.inner.index.take() {
            let replies = self.inner.replies.clone();
            let mut slots = replies.lock();
            // Freed whether or not the sender is done.
            let old = Replies::take(&mut slots, index);
            drop(slots);
            drop(old);
        }
    }
}

impl<T> Replies<T> {
    /// Every slot free but `busy` (ends alive), each free one on the free list once; how
    /// many slots there are.
    fn free_but(&self, busy: usize) -> usize {
        let slots = self.lock();
        let mut free = slots.free.clone();
        free.sort_unstable();
        free.dedup();
        assert_eq!(free.len(), slots.free.len(), "a slot freed twice");
        assert_eq!(free.len() + busy, slots.states.len(), "a slot never freed");
        let idle = slots.states.iter().filter(|s| matches!(s, State::Free));
        assert_eq!(idle.count(), free.len(), "a slot in use on the free list");
        slots.states.len()
    }
}

/// Runs `model` in every interleaving loom explores; how many that was (printed with
/// `--nocapture`).
fn check(model: impl Fn() + Sync + Send + 'static) -> usize {
    let mut builder = Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(PREEMPTIONS);
    }
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    builder.check(move || {
        counted.fetch_add(1, Ordering::Relaxed);
        model();
    });
    let runs = runs.load(Ordering::Relaxed);
    eprintln!("{runs} interleavings");
    runs
}

/// Checks that loom finds a failure of `model` (with a plant), and that it is the one
/// `expected` names: the model shown able to fail, and for its invariant.
fn fails(model: impl Fn() + Sync + Send + 'static, expected: &str) {
    let Err(panic) = catch_unwind(AssertUnwindSafe(|| check(model))) else {
        panic!("loom found no failure; expected {expected:?}");
    };
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or_default();
    assert!(
        message.contains(expected),
        "loom found {message:?}, not {expected:?}"
    );
}

/// Whether `got` is the very reply `sent` (not merely an equal one).
fn is(got: Option<&Arc<u32>>, sent: &Arc<u32>) -> bool {
    got.is_some_and(|got| Arc::ptr_eq(got, sent))
}

/// Polls once with a waker that does nothing.
fn poll_once<T>(future: &mut Receiver<T>) -> Poll<Option<T>> {
    Pin::new(future).poll(&mut Context::from_waker(Waker::noop()))
}

/// (a) Two requests in flight; the session task's thread sends both replies while the caller
/// polls the second once and drops it, then awaits the first. Each reply reaches its own
/// future only, the dropped one's is dropped, and both slots are free and reused.
fn two_in_flight(plant: Option<Plant>) -> impl Fn() + Sync + Send + 'static {
    move || {
        let replies = Pool::<Arc<u32>>::new(plant);
        let (one, two) = (Arc::new(1), Arc::new(2));
        let (tx1, rx1) = replies.open();
        let (tx2, mut rx2) = replies.open();
        let sender = {
            let (one, two) = (one.clone(), two.clone());
            thread::spawn(move || {
                tx1.send(one);
                tx2.send(two);
            })
        };
        if let Poll::Ready(got) = poll_once(&mut rx2) {
            assert!(
                is(got.as_ref(), &two),
                "the second future got another reply"
            );
        }
        drop(rx2);
        let got = block_on(rx1);
        assert!(is(got.as_ref(), &one), "the first future got another reply");
        drop(got);
        sender.join().unwrap();
        assert_eq!(Arc::strong_count(&one), 1, "the first reply leaked");
        assert_eq!(Arc::strong_count(&two), 1, "the second reply leaked");
        assert_eq!(replies.free_but(0), 2);
        let _ends = (replies.open(), replies.open());
        assert_eq!(replies.free_but(2), 2, "the slots were not reused");
    }
}

/// (b) The sender dropped unsent on the session task's thread while the caller awaits: the
/// future ends with "sender gone" (`None`), whichever came first, and the slot is freed.
fn sender_gone(plant: Option<Plant>) -> impl Fn() + Sync + Send + 'static {
    move || {
        let replies = Pool::<Arc<u32>>::new(plant);
        let (tx, rx) = replies.open();
        let sender = thread::spawn(move || drop(tx));
        assert!(block_on(rx).is_none());
        sender.join().unwrap();
        assert_eq!(replies.free_but(0), 1);
    }
}

/// (c) The caller drops its future and opens a new request, which may reuse the slot, while
/// the old sender finishes (sends, or is dropped, per `sends`) on the session task's thread:
/// the new request gets its own reply, never the old one. `audit`: the slots' accounting is
/// checked too (off, to show the wrong reply itself is caught).
fn reused_slot(
    plant: Option<Plant>,
    sends: bool,
    audit: bool,
) -> impl Fn() + Sync + Send + 'static {
    move || {
        let replies = Pool::<Arc<u32>>::new(plant);
        let (old, new) = (Arc::new(1), Arc::new(2));
        let (tx1, rx1) = replies.open();
        let sender = {
            let old = old.clone();
            thread::spawn(move || {
                if sends {
                    tx1.send(old);
                } else {
                    drop(tx1);
                }
            })
        };
        drop(rx1);
        let (tx2, rx2) = replies.open();
        tx2.send(new.clone());
        let got = block_on(rx2);
        assert!(is(got.as_ref(), &new), "the new request got another reply");
        drop(got);
        sender.join().unwrap();
        assert_eq!(Arc::strong_count(&old), 1, "the old reply leaked");
        assert_eq!(Arc::strong_count(&new), 1, "the new reply leaked");
        if audit {
            // One slot if the new request reused the old one, two if it came first.
            assert!(replies.free_but(0) <= 2);
        }
    }
}

#[test]
fn two_requests_in_flight_each_reply_reaches_its_own_future() {
    assert!(check(two_in_flight(None)) > 1);
}

#[test]
fn plant_wake_before_reply_loses_a_wakeup() {
    fails(two_in_flight(Some(Plant::WakeBeforeReply)), "deadlock");
}

#[test]
fn a_sender_dropped_unsent_ends_the_future() {
    assert!(check(sender_gone(None)) > 1);
}

#[test]
fn plant_sender_gone_unwoken_leaves_the_future_waiting() {
    fails(sender_gone(Some(Plant::SenderGoneUnwoken)), "deadlock");
}

#[test]
fn a_reused_slot_never_gets_the_old_reply() {
    assert!(check(reused_slot(None, true, true)) > 1);
    assert!(check(reused_slot(None, false, true)) > 1);
}

#[test]
fn plant_free_on_one_end_gives_the_old_reply_to_the_new_request() {
    // Found first: the old sender, done after the new pair, frees the slot a second time.
    fails(
        reused_slot(Some(Plant::FreeOnOneEnd), true, true),
        "a slot freed twice",
    );
    // And with the accounting unchecked: the old reply lands in the new request's slot.
    fails(
        reused_slot(Some(Plant::FreeOnOneEnd), true, false),
        "the new request got another reply",
    );
}
