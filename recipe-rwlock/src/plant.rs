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

recipes_core::plant_switch!(Plant);

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
