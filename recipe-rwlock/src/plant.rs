//! Planted defects of recipe-rwlock, for the negative controls of the async layer's simulator:
//! a reader that holds whatever write node is ahead of it.
//!
//! - Switched on at run time by [`set`] with the feature `plant` (off by default, never for
//!   users); without it this module is private and every check is a constant `false`.
//! - The switch is the process's: set one, run, clear it.

use recipes_core::{NodeMissing, Predicate, ReadPredicate, Verdict};

/// A defect of recipe-rwlock to put back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plant {
    /// A reader holds whatever write node is ahead of it (its predicate orders as the read
    /// predicate does, and holds at once).
    ReadIgnoresWrites,
}

#[cfg(feature = "plant")]
static ACTIVE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// `plant`'s code in [`ACTIVE`] (0: none).
#[cfg(feature = "plant")]
fn code(plant: Option<Plant>) -> u8 {
    plant.map_or(0, |plant| plant as u8 + 1)
}

/// Puts `plant` back (`None`: no defect).
#[cfg(feature = "plant")]
pub fn set(plant: Option<Plant>) {
    ACTIVE.store(code(plant), std::sync::atomic::Ordering::SeqCst);
}

/// Whether `plant` is the defect put back.
#[cfg(feature = "plant")]
pub(crate) fn active(plant: Plant) -> bool {
    ACTIVE.load(std::sync::atomic::Ordering::Relaxed) == code(Some(plant))
}

/// Whether `plant` is the defect put back: never, without the feature.
#[cfg(not(feature = "plant"))]
pub(crate) const fn active(_plant: Plant) -> bool {
    false
}

/// [`ReadPredicate`]'s order, but every reader holds at once: the predicate of the planted
/// [`Plant::ReadIgnoresWrites`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct IgnoresWrites;

impl Predicate for IgnoresWrites {
    fn lock_name(&self) -> &str {
        ReadPredicate.lock_name()
    }

    fn sort(&self, children: &mut [String]) {
        ReadPredicate.sort(children);
    }

    fn verdict(&self, sorted: &[String], ours: &str) -> Result<Verdict, NodeMissing> {
        match sorted.iter().any(|c| c == ours) {
            true => Ok(Verdict::Hold),
            false => Err(NodeMissing),
        }
    }
}
