//! Lock cohorting (Dice, Marathe and Shavit, "Lock Cohorting", PPoPP 2012), the rules with no
//! IO and no clock: the waiters of one process on one lock queue here, behind one lock node of
//! the process's; while that node is held, the lock passes from local waiter to local waiter
//! with no request at all, up to a [`Bound`] (a count of hand-offs and a time since the node
//! was granted), after which the node is released so that other processes' waiters, Curator's
//! included, get their turn in the server's order.
//!
//! [`Cohort`] is the state of one lock in one process: its local waiters (in arrival order)
//! and its node (none, being taken by an attempt, or held by one local holder). Each call
//! takes an event (a waiter arrives or leaves, the attempt holds or fails, the holder
//! releases) and returns the [`Effects`] the IO layer carries out, in this order: grant the
//! lock to one waiter, fail waiters, release the node, abort or start an attempt. Nothing here
//! sends a request: the node's attempt is the recipe's ordinary acquire.
//!
//! Two sides: [`Cohort`] (exclusive: a mutex, a write lock), where the lock passes from one
//! local holder to the next, and [`SharedCohort`] (shared: a read lock), where the process's
//! readers join one read node while its batch is open. Each side's decisions (may the lock
//! pass on, is the attempt aborted, ...) are the rule functions of [`CohortRules`] and
//! [`SharedRules`], kept by [`Standard`].

mod exclusive;
#[cfg(test)]
mod search;
mod shared;

pub use exclusive::{Cohort, CohortRules, Effects};
pub use shared::{BatchId, SharedCohort, SharedEffects, SharedRules};

use std::time::Duration;

/// How long one process may keep the lock among its own waiters before other processes get
/// their turn: a hand-off (or, on the shared side, a reader joining the process's read node)
/// happens only while both hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// Local hand-offs (readers joining) per node at most: `0` makes every holder release the
    /// node (no cohorting).
    pub handoffs: u32,
    /// No local hand-off (no reader joining) once this long has passed since the node was
    /// granted.
    pub hold: Duration,
}

impl Default for Bound {
    /// 1,024 hand-offs and 50 ms: a batch of in-process holders costs other processes at
    /// most 50 ms behind it (plus the last holder's own critical section). The time is the
    /// bound that matters to them; the count keeps a batch of very short critical sections
    /// from taking all of it. Each batch pays one release and one new node (two fsync'd
    /// writes at the server): with critical sections of a few µs, 64 hand-offs per batch
    /// gave 40,000 cycles/s in one process, 1,024 gave 570,000 (`zk-worker bench ...
    /// mutex-cohort:H`, 16 tasks).
    fn default() -> Self {
        Self {
            handoffs: 1_024,
            hold: Duration::from_millis(50),
        }
    }
}

/// The rules of both sides, as the module describes them: what [`Cohort`] and [`SharedCohort`]
/// decide by unless told otherwise.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Standard;

/// Keeps [`CohortRules`] and [`SharedRules`] implemented in this crate only.
mod sealed {
    /// The supertrait no other crate can implement.
    pub trait Sealed {}

    impl Sealed for super::Standard {}
}

/// A waiter's place in a [`Cohort`].
pub type WaiterId = u64;

/// An attempt to take the node, numbered so that a late result of an aborted one is told
/// apart from the current one's.
pub type AttemptId = u64;
