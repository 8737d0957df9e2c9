//! Planted defects of this crate's lock layer, for the negative controls of the async layer's
//! simulator and the chaos suite: each puts back a defect the layer once had.
//!
//! - Switched on at run time by [`set`] with the feature `plant` (off by default, never for
//!   users); without it this module is private and every check is a constant `false`.
//! - The switch is the process's: set one, run, clear it.
//! - The defects of the other crates are theirs (`recipes_core::plant`, and the `plant`
//!   module of each recipe crate, each behind its own feature `plant`).

/// A defect of the lock layer to put back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plant {
    /// A guard or lease dropped outside any runtime gives its delete up (the node stays for
    /// the whole session): the runtime the hold was taken on is ignored.
    NoRuntimeRetry,
    /// A new attempt waits for the pending cleanups of abandoned attempts with no regard for
    /// its deadline or the session's end.
    TurnIgnoresDeadline,
    /// The client's local `Lost` ends every waiter, as if the session had expired.
    LostEndsWaiters,
    /// A cohort grants its node to two local waiters at once when the node's attempt holds:
    /// two holders in one process.
    CohortDoubleGrant,
    /// A shared cohort deletes its read node when a reader leaves while others still read:
    /// readers holding on a node that is gone.
    CohortEarlyRelease,
    /// A hold keeps no watch on its own node: a node deleted while the session lives goes
    /// untold, as before the lost signal covered it.
    NoNodeWatch,
}

recipes_core::plant_switch!(Plant);
