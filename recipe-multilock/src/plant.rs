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
