//! Planted defects of recipe-multilock, for the negative controls of the async layer's simulator:
//! a multi-lock held before its last member is.
//!
//! - Switched on at run time by [`set`] with the feature `plant` (off by default, never for
//!   users); without it this module is private and every check is a constant `false`.
//! - The switch is the process's: set one, run, clear it.

/// A defect of recipe-multilock to put back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plant {
    /// A multi-lock reports itself held before its last member is taken: that member is
    /// only tried, and left out of the guard.
    MultiSkipsLast,
}

recipes_core::plant_switch!(Plant);
