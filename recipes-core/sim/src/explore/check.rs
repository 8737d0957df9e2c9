//! [`Violation`]: what the explorer checks at every step, and how a breach reads.
//!
//! 1. **Stuck**: [`recipes_core::Runner::handle`] never reports the machine idle by accident.
//! 2. **Grant**: `Held` only for nodes our session created with the czxid the machine names,
//!    that the explorer's own rule ([`super::Grant`]) grants in the tree as the server
//!    listed it.
//! 3. **Failure**: a failure only when the model justifies it (`SessionExpired` after an
//!    expiry, `NodeVanished` after meddling or an expiry, `Abandoned` after an abandon,
//!    `TimedOut` at or past a deadline), never `Zk(_)`; and our session never deletes another
//!    client's node.
//! 4. **Deadline**: with a deadline `d`, no timer later than `d + DEADLINE_GRACE` while there
//!    is no outcome, and an outcome once a timer fires at or past it.
//! 5. **Left behind**: once the attempt ended and its replies are in, every node of ours is
//!    held or covered by its cleanups (releases, once held); and after a `CleanupMachine` ran
//!    them through the same model, none is left but the held ones.
//! 6. **Liveness**: from a quiet state (connected, nothing in flight, no fault that excuses a
//!    failure), once the other clients release, the attempt ends `Held` (or `TimedOut` with a
//!    deadline) within a bounded number of steps.

use std::fmt;

/// Which check broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Check {
    /// 1: the runner found the machine idle by accident.
    Stuck,
    /// 2: held without the server's grant.
    Grant,
    /// 3: failed without a reason in the model (or deleted another client's node).
    Failure,
    /// 4: the deadline was not kept.
    Deadline,
    /// 5: a node of ours was left behind.
    LeftBehind,
    /// 6: no hold once the lock was free and the link quiet.
    Liveness,
}

impl Check {
    /// Its number and name, as the module doc lists them.
    pub fn title(self) -> &'static str {
        match self {
            Check::Stuck => "1 stuck",
            Check::Grant => "2 held without the grant",
            Check::Failure => "3 unjustified failure",
            Check::Deadline => "4 deadline",
            Check::LeftBehind => "5 left behind",
            Check::Liveness => "6 liveness",
        }
    }
}

/// A breach of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Which check.
    pub check: Check,
    /// What was seen.
    pub detail: String,
}

impl Violation {
    pub(crate) fn new(check: Check, detail: impl Into<String>) -> Self {
        Self {
            check,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "check {}: {}", self.check.title(), self.detail)
    }
}
