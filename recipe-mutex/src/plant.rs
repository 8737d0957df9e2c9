//! Planted defects, for the simulator only (feature `plant`, off by default: without it this
//! module is empty and every check below is a constant `false`).
//!
//! Each switch puts back a defect the async layer once had, so that the seeded simulator of
//! the async layer (`zk-sim-layer`) can show that it catches it. The switches are the
//! process's: set one, run the schedules, clear it.

/// A defect to put back.
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
    /// A waiter holds as soon as the node it watches goes, without listing again (in
    /// `recipes-core`'s acquire machine): a negative control for the chaos suite.
    HandOffShortcut,
    /// A waiter holds when its connection drops, whatever is ahead of it (in `recipes-core`'s
    /// acquire machine): a negative control for the chaos suite's log judge, one the
    /// checker's old rules excused.
    GrantOnDisconnect,
    /// A reader holds whatever write node is ahead of it (recipe-rwlock, feature `plant`).
    ReadIgnoresWrites,
    /// A semaphore counts one lease more than its maximum as room (recipe-semaphore, feature
    /// `plant`): the count rule off by one.
    SemaphoreOneTooMany,
    /// A semaphore's waiter lets the inner lock go as soon as it waits, and takes its lease
    /// as soon as `leases/` changes, without counting again (in `recipes-core`'s semaphore
    /// machine): the lease wait's own hand-off shortcut, a negative control for the chaos
    /// suite.
    LeaseWaitShortcut,
    /// A multi-lock reports itself held before its last member is taken: that member is
    /// taken in the background, outside the guard (recipe-multilock, feature `plant`).
    MultiSkipsLast,
    /// A cohort grants its node to two local waiters at once when the node's attempt holds
    /// (recipe-mutex's cohort): two holders in one process.
    CohortDoubleGrant,
    /// A shared cohort deletes its read node when a reader leaves while others still read
    /// (recipe-mutex's shared cohort): readers holding on a node that is gone.
    CohortEarlyRelease,
    /// A hold keeps no watch on its own node (`hold/watch.rs`): a node deleted while the
    /// session lives goes untold, as before the lost signal covered it.
    NoNodeWatch,
}

#[cfg(feature = "plant")]
mod switch {
    use std::sync::atomic::{AtomicU8, Ordering};

    use super::Plant;

    static ACTIVE: AtomicU8 = AtomicU8::new(0);

    fn code(plant: Option<Plant>) -> u8 {
        match plant {
            None => 0,
            Some(Plant::NoRuntimeRetry) => 1,
            Some(Plant::TurnIgnoresDeadline) => 2,
            Some(Plant::LostEndsWaiters) => 3,
            Some(Plant::HandOffShortcut) => 4,
            Some(Plant::ReadIgnoresWrites) => 5,
            Some(Plant::SemaphoreOneTooMany) => 6,
            Some(Plant::MultiSkipsLast) => 7,
            Some(Plant::GrantOnDisconnect) => 8,
            Some(Plant::CohortDoubleGrant) => 9,
            Some(Plant::CohortEarlyRelease) => 10,
            Some(Plant::NoNodeWatch) => 11,
            Some(Plant::LeaseWaitShortcut) => 12,
        }
    }

    /// Puts `plant` back (`None`: no defect).
    pub fn set(plant: Option<Plant>) {
        ACTIVE.store(code(plant), Ordering::SeqCst);
        recipes_core::plant::set_hand_off_shortcut(plant == Some(Plant::HandOffShortcut));
        recipes_core::plant::set_grant_on_disconnect(plant == Some(Plant::GrantOnDisconnect));
        recipes_core::plant::set_lease_wait_shortcut(plant == Some(Plant::LeaseWaitShortcut));
    }

    /// Whether `plant` is the defect put back (the other recipe crates ask too).
    #[doc(hidden)]
    pub fn active(plant: Plant) -> bool {
        ACTIVE.load(Ordering::Relaxed) == code(Some(plant))
    }
}

#[cfg(feature = "plant")]
pub use switch::set;

/// Seeds this thread's UUID generator (the protection prefix of every lock node it names),
/// so that a simulated schedule replays bit for bit. Never for users.
#[cfg(feature = "plant")]
pub fn seed_uuids(seed: u64) {
    crate::uuid::seed_thread(seed);
}

#[cfg(feature = "plant")]
pub use switch::active;

#[cfg(not(feature = "plant"))]
#[doc(hidden)]
pub const fn active(_plant: Plant) -> bool {
    false
}
