//! Apache Curator's `InterProcessMutex` for Rust, wire-compatible with Curator 5.4, and the
//! async lock driver and hold layer that the other recipes (`recipe-rwlock`,
//! `recipe-semaphore`, `recipe-multilock`) reuse.
//!
//! It is not a ZooKeeper client (that is `zk-client`) and holds no lock logic of its own: the
//! rules are `recipes-core`'s machines; this crate runs them against a session ([`driver`]),
//! keeps who holds what ([`hold`]), and gives them a lock's API ([`InterProcessMutex`],
//! [`MutexGuard`]).
//!
//! Beyond Curator: one round trip to take a free lock, a fencing token, a lost-lock signal,
//! cancel-safe acquires (dropping an acquire leaves no node), guaranteed releases (a release
//! once started finishes in the background), and a revocation check that does not miss a
//! revoke written before the watch.

pub mod driver;
mod error;
pub mod hold;
mod lock;
mod mutex;
mod owner;
mod revoke;
#[doc(hidden)]
pub mod surface;
pub mod turns;
mod uuid;

pub use error::Error;
pub use hold::{LockGuard, Loss};
pub use lock::{Lock, LockFuture};
pub use mutex::{InterProcessMutex, MutexGuard, participant_nodes, validate_lock_path};
pub use owner::Owner;
pub use revoke::{REVOKE_MESSAGE, RevocationListener, revoke};
pub use uuid::random_uuid;
