//! The synchronization types the loom models swap in: loom's under `--cfg zk_loom` in this
//! crate's tests, std's everywhere else (as tokio's `src/loom`).
//!
//! - The structures loom checks (the hold table, the turns gate) take their lock and atomics
//!   from here, never from `std::sync` directly, so the models run the very code users get.
//! - The models live in test modules beside each structure; what they share (running every
//!   interleaving, showing a planted model fails for its invariant) is [`model`].
//! - Our own cfg, not `loom`: `--cfg loom` would turn on tokio's internal loom mode too.

#[cfg(all(test, zk_loom))]
pub(crate) use ::loom::sync::atomic::{AtomicBool, Ordering};
#[cfg(all(test, zk_loom))]
pub(crate) use ::loom::sync::{Mutex, MutexGuard};
#[cfg(not(all(test, zk_loom)))]
pub(crate) use std::sync::atomic::{AtomicBool, Ordering};
#[cfg(not(all(test, zk_loom)))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(all(test, zk_loom))]
pub(crate) mod model;
