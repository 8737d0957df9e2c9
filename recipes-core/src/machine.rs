//! [`Machine`]: the shape every recipe's state machine has, so that one driver (and the
//! simulator) runs them all.

use std::time::Instant;

use crate::op::{Connection, Op, Reply, WatchEvent, WatchKind};

/// An input to a [`Machine`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Begin. Given once, first.
    Start,
    /// The result of the oldest op not yet answered (replies come in the order the ops were
    /// issued).
    Reply(Reply),
    /// A watch left by one of our ops fired.
    Watch {
        /// Which kind of watch.
        kind: WatchKind,
        /// The watched path.
        path: String,
        /// What happened.
        event: WatchEvent,
    },
    /// The session's connection changed.
    Connection(Connection),
    /// [`Machine::poll_timeout`] has passed (a spurious call does nothing).
    Timeout,
    /// Something outside ZooKeeper changed (a shared count was updated): look again.
    Wake,
    /// The caller gave up (its future was dropped). The machine issues nothing more, keeps
    /// taking the replies of ops already in flight (to learn which nodes exist), and then
    /// owes only its [`Machine::cleanups`].
    Abandon,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<T> {
    /// Held: the machine's result (a lock node, a lease, ...).
    Held(T),
    /// The deadline passed first. [`Machine::cleanups`] says what to delete.
    TimedOut,
    /// The attempt failed. [`Machine::cleanups`] says what to delete.
    Failed(Failure),
}

/// Why an attempt failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Failure {
    /// The session expired; nothing of ours is left.
    SessionExpired,
    /// Our node vanished (deleted under us, or the base container was removed); Curator then
    /// retries with a new node, and so does the driver, within the same deadline.
    NodeVanished,
    /// A node above the lock path is missing and could not be created (with a chroot: the
    /// chroot node itself does not exist).
    ParentMissing,
    /// Our node's sequence number is negative: the parent's 32-bit sequence counter wrapped
    /// after 2^31 creations, and Curator's string order would put our node before older ones
    /// (two holders). The attempt gives up rather than hold; the counter resets once the
    /// lock's container is empty and removed.
    SequenceWrapped,
    /// An op failed with an error the machine does not retry; the driver kept the full error.
    Zk(crate::ZkError),
    /// The caller abandoned the attempt ([`Input::Abandon`]).
    Abandoned,
}

/// A node that must be deleted so that nothing of ours is left behind.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Cleanup {
    /// Delete this node.
    Delete(String),
    /// A create may have been applied without our hearing of it: `sync` `base`, list it and
    /// delete every child starting with `prefix` (the protection prefix `_c_<uuid>-`).
    FindAndDelete {
        /// The parent.
        base: String,
        /// `_c_<uuid>-`.
        prefix: String,
    },
}

/// A recipe's state machine: ZooKeeper ops out, replies, watch events, connection changes and
/// time in. No IO, no clock: `now` is given with every input and never goes back.
///
/// # Calling contract
///
/// Give [`Input::Start`] once, then every other input as it happens; after each input, drain
/// [`Machine::poll_op`] and send the ops in that order (their replies come back, in the same
/// order, as [`Input::Reply`]); arm a timer for [`Machine::poll_timeout`] and give
/// [`Input::Timeout`] when it passes. Once [`Machine::outcome`] is set the attempt is over; if it
/// is not `Held`, run [`Machine::cleanups`]. To give up early, give [`Input::Abandon`], keep
/// feeding the replies of ops in flight, then run the cleanups.
///
/// A machine is never idle by accident: after each input it has an op in flight, a watch set,
/// a timer in the future, is waiting for the connection to come back, or has an outcome.
/// [`crate::Runner`] checks this after every input.
pub trait Machine {
    /// What holding gives (a lock node, a set of leases, ...).
    type Output;

    /// Feeds one input.
    fn handle(&mut self, now: Instant, input: Input);

    /// The next op to send, in order.
    fn poll_op(&mut self) -> Option<Op>;

    /// When to give [`Input::Timeout`]; `None` when no timer is due. Always after the `now` of
    /// the last input, unless the attempt is over.
    fn poll_timeout(&self) -> Option<Instant>;

    /// How the attempt ended, once it has.
    fn outcome(&self) -> Option<&Outcome<Self::Output>>;

    /// What must be deleted if the attempt ends now without holding (or was abandoned), so that
    /// nothing of ours is left. Empty once held.
    fn cleanups(&self) -> Vec<Cleanup>;

    /// What must be deleted once the machine holds: scaffolding that served the acquisition
    /// and must not outlive it (the semaphore's inner lock node). A driver starts these
    /// deletes, guaranteed, as soon as it sees `Held`, without waiting for them. Empty
    /// otherwise; none by default.
    fn releases(&self) -> Vec<Cleanup> {
        Vec::new()
    }
}

/// A boxed machine is a machine (so a simulator or a driver can hold machines of several
/// kinds, or wrapped ones, behind one type).
impl<M: Machine + ?Sized> Machine for Box<M> {
    type Output = M::Output;

    fn handle(&mut self, now: Instant, input: Input) {
        (**self).handle(now, input);
    }

    fn poll_op(&mut self) -> Option<Op> {
        (**self).poll_op()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        (**self).poll_timeout()
    }

    fn outcome(&self) -> Option<&Outcome<Self::Output>> {
        (**self).outcome()
    }

    fn cleanups(&self) -> Vec<Cleanup> {
        (**self).cleanups()
    }

    fn releases(&self) -> Vec<Cleanup> {
        (**self).releases()
    }
}
