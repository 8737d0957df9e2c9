//! Planted defects, for the simulator only (feature `plant`, off by default: without it this
//! module is empty and every check below is a constant `false`).
//!
//! Each switch puts back a defect the async layer once had, so that the seeded simulator of
//! the async layer (`zk-sim`'s `layer`) can show that it catches it. The switches are the
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
        }
    }

    /// Puts `plant` back (`None`: no defect).
    pub fn set(plant: Option<Plant>) {
        ACTIVE.store(code(plant), Ordering::SeqCst);
        recipes_core::plant::set_hand_off_shortcut(plant == Some(Plant::HandOffShortcut));
    }

    pub(crate) fn active(plant: Plant) -> bool {
        ACTIVE.load(Ordering::Relaxed) == code(Some(plant))
    }
}

#[cfg(feature = "plant")]
pub use switch::set;

#[cfg(feature = "plant")]
pub(crate) use switch::active;

#[cfg(not(feature = "plant"))]
pub(crate) const fn active(_plant: Plant) -> bool {
    false
}
