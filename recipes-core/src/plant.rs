//! Planted defects of recipes-core's machines, for negative controls (feature `plant`, never
//! for users), switched on at run time by this module's setters; without the feature this
//! module is private and each check is a constant `false`.
//!
//! - The hand-off shortcut: a waiter holds as soon as the node it watches goes, without
//!   listing the children again (the first driver's bug: the predecessor may have been a
//!   waiter that gave up while the holder ahead of it still holds).
//! - The grant on disconnect: a waiter holds when its connection drops, whatever is ahead of
//!   it (the history the chaos checker's old rules excused: a second holder let in while the
//!   first holder's node lives on, during a connection loss).
//! - The lease wait shortcut (the semaphore's own hand-off shortcut): a waiter for a lease
//!   lets the inner lock go as soon as it waits, and takes its lease as soon as `leases/`
//!   changes, without counting again (so waiters side by side all take the one lease freed).

#[cfg(feature = "plant")]
mod switch {
    use std::sync::atomic::{AtomicBool, Ordering};

    static SHORTCUT: AtomicBool = AtomicBool::new(false);
    static GRANT_ON_DISCONNECT: AtomicBool = AtomicBool::new(false);
    static LEASE_WAIT_SHORTCUT: AtomicBool = AtomicBool::new(false);

    /// Switches the hand-off shortcut on or off.
    pub fn set_hand_off_shortcut(on: bool) {
        SHORTCUT.store(on, Ordering::SeqCst);
    }

    /// Switches the grant on disconnect on or off.
    pub fn set_grant_on_disconnect(on: bool) {
        GRANT_ON_DISCONNECT.store(on, Ordering::SeqCst);
    }

    /// Switches the lease wait shortcut on or off.
    pub fn set_lease_wait_shortcut(on: bool) {
        LEASE_WAIT_SHORTCUT.store(on, Ordering::SeqCst);
    }

    pub(crate) fn lease_wait_shortcut() -> bool {
        LEASE_WAIT_SHORTCUT.load(Ordering::Relaxed)
    }

    pub(crate) fn hand_off_shortcut() -> bool {
        SHORTCUT.load(Ordering::Relaxed)
    }

    pub(crate) fn grant_on_disconnect() -> bool {
        GRANT_ON_DISCONNECT.load(Ordering::Relaxed)
    }
}

#[cfg(feature = "plant")]
pub use switch::{set_grant_on_disconnect, set_hand_off_shortcut, set_lease_wait_shortcut};

#[cfg(feature = "plant")]
pub(crate) use switch::{grant_on_disconnect, hand_off_shortcut, lease_wait_shortcut};

#[cfg(not(feature = "plant"))]
pub(crate) const fn hand_off_shortcut() -> bool {
    false
}

#[cfg(not(feature = "plant"))]
pub(crate) const fn grant_on_disconnect() -> bool {
    false
}

#[cfg(not(feature = "plant"))]
pub(crate) const fn lease_wait_shortcut() -> bool {
    false
}
