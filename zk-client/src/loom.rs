//! The synchronization types the loom models swap in: loom's under `--cfg zk_loom` in this
//! crate's tests, std's everywhere else (as tokio's `src/loom`).
//!
//! - The structures loom checks (the reply slots) take their lock from here, never from
//!   `std::sync` directly, so the models run the very code users get.
//! - The models live in test modules beside each structure.
//! - Our own cfg, not `loom`: `--cfg loom` would turn on tokio's internal loom mode too.

#[cfg(all(test, zk_loom))]
pub(crate) use ::loom::sync::{Mutex, MutexGuard};
#[cfg(not(all(test, zk_loom)))]
pub(crate) use std::sync::{Mutex, MutexGuard};
