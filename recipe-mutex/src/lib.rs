//! Apache Curator's `InterProcessMutex` for Rust, wire-compatible with Curator 5.4, and the
//! lock layer that the other recipes (`recipe-rwlock`, `recipe-semaphore`,
//! `recipe-multilock`) are built on.
//!
//! It is not a ZooKeeper client (that is `zk-client`) and holds no lock rules of its own: the
//! rules are `recipes-core`'s machines. This crate runs them against a session and gives them
//! a lock's API ([`InterProcessMutex`], [`MutexGuard`]). The running is [`layer`]: the async
//! driver, the holds and their guards, the turns and the common lock surface, public for
//! the recipe crates (and anyone building a recipe of their own); a program that only takes
//! locks needs none of it.
//!
//! Ownership is explicit, as with Rust's own locks: the guard is the ownership. Every `lock()`
//! call is its own participant, whatever task or handle it comes from; re-entering is a
//! nested hold borrowed from the guard ([`Hold::reenter`]); a guard may be released from
//! any task or thread. Curator's per-thread reentrancy maps to "pass the guard down" (see
//! [`InterProcessMutex`]'s table).
//!
//! Opt-in, [`CohortMutex`] ([`InterProcessMutex::cohort`]): the tasks of this process share
//! one place in the lock's queue (lock cohorting), so the lock passes between them with no
//! request, within a bound after which other processes get their turn. The same over any
//! lock whose hold is one node ([`NodeLock`]), and its shared side ([`SharedCohortLock`]:
//! readers of one process on one read node), are what `recipe-rwlock`'s cohort is made of.
//!
//! Beyond Curator: one round trip to take a free lock, a fencing token, a lost-lock signal,
//! cancel-safe acquires (dropping an acquire leaves no node), guaranteed releases (a release
//! once started finishes in the background, even from a guard dropped off the runtime), and a
//! revocation check that does not miss a revoke written before the watch.
//!
//! # Features
//!
//! - `tracing` (off by default): events through [`tracing`](https://docs.rs/tracing) for
//!   every lock attempt, hold (`info`, with the lock's path, our node, the session and the
//!   fencing token, and whether the hold was handed over by a predecessor's release), release,
//!   retry and background cleanup, with targets under `recipe_mutex`; it turns on
//!   `zk-client`'s `tracing` too (connection attempts, state changes, reconnects, requests).
//! - `metrics` (off by default): lock metrics through the
//!   [`metrics`](https://docs.rs/metrics) facade, for whatever recorder the program installs:
//!   acquire wait time, acquisitions, timeouts, failures, cancellations, hold time, losses by
//!   [`Loss`] kind, hand-offs per cohort batch. The names, labels and why the lock's path is
//!   not one of them: the `metrics` module (present with the feature).
//!
//! # Examples
//!
//! ```no_run
//! use std::time::Duration;
//! use recipe_mutex::InterProcessMutex;
//!
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! let client = zk_client::Client::builder().hosts("127.0.0.1:2181").connect().await?;
//! let mutex = InterProcessMutex::new(client, "/app/locks/orders")?;
//! if let Some(guard) = mutex.try_lock_for(Duration::from_secs(2)).await? {
//!     println!("holding, fencing token {}", guard.fencing_token());
//!     guard.release().await?;
//! }
//! # Ok(()) }
//! ```

mod cohort;
mod error;
mod fenced;
mod host;
mod ids;
pub mod layer;
mod lock;
mod log;
mod loom;
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(not(feature = "metrics"))]
mod metrics;
mod mutex;
#[cfg(feature = "plant")]
pub mod plant;
#[cfg(not(feature = "plant"))]
mod plant;
mod revoke;
mod sequencer;
mod uuid;
mod waiting;

pub use cohort::{
    CohortBound, CohortGuard, CohortMutex, CohortToken, NodeLock, SharedCohortGuard,
    SharedCohortLock, WriterWait,
};
pub use error::Error;
pub use host::host_address;
pub use layer::hold::{Hold, Loss, NestedGuard};
pub use layer::participants::{Participant, Standing};
pub use lock::{Guard, IntoLock, Lock, LockFuture, LockKind};
pub use mutex::{InterProcessMutex, MutexGuard, validate_lock_path};
pub use revoke::{REVOKE_MESSAGE, RevocationListener, revoke};
pub use sequencer::{
    LEASE_PENDING_WAIT, NodeKind, ParseSequencerError, SEQUENCER_PREFIX, Sequencer, SequencerCheck,
};
pub use waiting::WAIT_REPORT_AFTER;

/// `docs/cohort.md`'s code, compiled as a doctest (no item of the crate).
#[cfg(doctest)]
#[doc = include_str!("../docs/cohort.md")]
struct CohortDocs;
