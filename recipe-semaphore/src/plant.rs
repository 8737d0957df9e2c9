//! Planted defects of recipe-semaphore, for the negative controls of the async layer's simulator:
//! the count rule off by one.
//!
//! - Switched on at run time by [`set`] with the feature `plant` (off by default, never for
//!   users); without it this module is private and every check is a constant `false`.
//! - The switch is the process's: set one, run, clear it.

/// A defect of recipe-semaphore to put back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plant {
    /// A semaphore counts one lease more than its maximum as room.
    SemaphoreOneTooMany,
}

recipes_core::plant_switch!(Plant);
