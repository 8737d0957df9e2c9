//! Apache Curator's `InterProcessSemaphoreV2` and `InterProcessSemaphoreMutex` for Rust,
//! wire-compatible with Curator 5.4: our clients and Curator's share the same leases on the
//! same path.
//!
//! - [`InterProcessSemaphoreV2`]: up to N leases at once across processes, N fixed or read
//!   from a [`SharedCount`] and followed as it changes. Each lease is a [`Lease`] (fencing
//!   token, release, returned on drop).
//! - [`InterProcessSemaphoreMutex`]: one lease of one, not reentrant by construction: every
//!   `lock()` queues until the guard that holds it is released, whatever task asks. Its guard
//!   is a [`SemaphoreMutexGuard`] (no `reenter()`).
//!
//! Ownership is explicit: a [`Lease`] or a guard is the ownership, released from any task or
//! thread. Coming from Curator: `acquire()` returns the lease as in Curator; `returnLease(l)`
//! is `l.release().await` (or drop it); `returnAll(ls)` is
//! [`InterProcessSemaphoreV2::return_all`] (or the free [`return_all`]); the semaphore mutex's `acquire()`/`release()` are
//! `lock()` and `guard.release()`, and code that needs it while holding it takes the guard.
//!
//! The layout is Curator's: `<path>/locks/` is an `InterProcessMutex` that serialises
//! whoever is adding leases, `<path>/leases/_c_<uuid>-lease-<seq>` one node per lease, and a
//! client holds when `leases/` has at most N children. The rules are
//! `recipes_core::semaphore`'s machine, run by `recipe-mutex`'s driver; this crate gives them
//! an API. It is not a ZooKeeper client (that is `zk-client`).
//!
//! Beyond Curator: an uncontended acquisition awaits two round trips instead of five (the
//! inner lock's create and listing in one flight, the leases' creates and count in another,
//! the inner lock's delete not awaited) and leaves no watch to fire for nothing; several
//! leases are taken under one hold of the inner lock, so two of our clients asking for
//! several cannot deadlock each holding part (against Curator clients, which take them one at
//! a time, that risk stays on their side); cancel-safe acquires; guaranteed returns.
//!
//! # Examples
//!
//! ```no_run
//! use recipe_semaphore::{InterProcessSemaphoreMutex, InterProcessSemaphoreV2};
//!
//! # async fn f(client: zk_client::Client) -> Result<(), recipe_semaphore::Error> {
//! // A pool of 3 connections shared by every process.
//! let pool = InterProcessSemaphoreV2::new(client.clone(), "/app/pools/db", 3)?;
//! let lease = pool.acquire().await?;
//! println!("lease {} (token {})", lease.node_path(), lease.fencing_token());
//! lease.release().await?;
//!
//! // Two at once, all or none.
//! let two = pool.acquire_many(2).await?;
//! pool.return_all(two).await?;
//!
//! // A non-reentrant mutex: a second lock() queues behind this guard.
//! let m = InterProcessSemaphoreMutex::new(client, "/app/locks/job")?;
//! let guard = m.lock().await?;
//! assert!(m.try_lock_for(std::time::Duration::ZERO).await?.is_none());
//! guard.release().await?;
//! # Ok(()) }
//! ```

mod count;
mod error;
mod lease;
mod mutex;
mod mutex_guard;
#[cfg(feature = "plant")]
pub mod plant;
#[cfg(not(feature = "plant"))]
mod plant;
mod semaphore;
mod take;

pub use count::SharedCount;
pub use error::Error;
pub use lease::Lease;
pub use mutex::InterProcessSemaphoreMutex;
pub use mutex_guard::SemaphoreMutexGuard;
pub use recipe_mutex::{
    Hold, LEASE_PENDING_WAIT, Loss, NodeKind, ParseSequencerError, Sequencer, SequencerCheck,
};
pub use semaphore::{InterProcessSemaphoreV2, MAX_LEASES_ASKED, return_all};
