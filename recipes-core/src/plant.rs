//! A planted defect for negative controls (feature `plant`, never for users): the hand-off
//! shortcut, a waiter that holds as soon as the node it watches goes, without listing the
//! children again (the first driver's bug: the predecessor may have been a waiter that gave
//! up while the holder ahead of it still holds). Switched on at run time by
//! `recipe_mutex::plant::set`; without the feature it is a constant `false`.

#[cfg(feature = "plant")]
mod switch {
    use std::sync::atomic::{AtomicBool, Ordering};

    static SHORTCUT: AtomicBool = AtomicBool::new(false);

    /// Switches the hand-off shortcut on or off.
    pub fn set_hand_off_shortcut(on: bool) {
        SHORTCUT.store(on, Ordering::SeqCst);
    }

    pub(crate) fn hand_off_shortcut() -> bool {
        SHORTCUT.load(Ordering::Relaxed)
    }
}

#[cfg(feature = "plant")]
pub use switch::set_hand_off_shortcut;

#[cfg(feature = "plant")]
pub(crate) use switch::hand_off_shortcut;

#[cfg(not(feature = "plant"))]
pub(crate) const fn hand_off_shortcut() -> bool {
    false
}
