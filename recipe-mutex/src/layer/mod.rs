//! The lock layer every recipe crate runs on: the one async driver, the holds and their
//! guards, the turns that bound abandoned attempts, the queue listing and the common lock
//! surface. `recipe-rwlock`, `recipe-semaphore` and `recipe-multilock` are built on it, as
//! Curator's recipes are on its `LockInternals`; a program that only takes locks needs none of
//! it.
//!
//! The rules are not here: whether a node holds, which node it waits behind, what to delete
//! on a timeout, are `recipes-core`'s machines and predicates. This layer runs them against a
//! session and turns what they decide into guards.
//!
//! # Building a lock on it
//!
//! A lock kind is a handle over an [`Arc<Holds>`](hold::Holds) (its holds in this process, the
//! client and the path) and three methods; [`lock_surface!`](crate::lock_surface) writes the
//! rest (`lock`, `try_lock_for`, `is_acquired_in_this_process` and the [`Lock`](crate::Lock)
//! trait):
//!
//! 1. `take(deadline)`: [`Holds::take`](hold::Holds::take) waits for a
//!    [turn](turns::wait), then runs the attempt it is given, typically
//!    [`driver::acquire`] with a recipes-core predicate (or [`driver::take_node`] with a
//!    machine of the recipe's own), and adopts the node it took as a [`Hold`](crate::Hold).
//! 2. `wrap(guard)`: the guard users get (the hold itself, or a type of the recipe's that owns
//!    it).
//! 3. `holds()`: the `Arc<Holds>` above.
//!
//! Listing a lock's queue for users is [`participants::queue`] with the recipe's sort and
//! rule.
//!
//! # What the layer promises every lock built on it
//!
//! - The guard is the ownership: no task or thread identity, each acquisition its own
//!   participant.
//! - Cancel-safe acquires: an attempt dropped at any await leaves no node (its cleanup runs in
//!   the background, bounded per session and lock path by the turns).
//! - Guaranteed release: a release once started finishes, also from a guard dropped off the
//!   runtime.
//! - A lost hold is told: the session's loss, and the hold's own node deleted under a live
//!   session ([`Hold::lost`](crate::Hold::lost)).
//! - Bounded bursts: at most [`ACQUIRES_IN_FLIGHT`](driver::admission::ACQUIRES_IN_FLIGHT)
//!   attempts of one client have their first requests out at once; an attempt that waits
//!   behind a holder gives its slot back, so waiters never hold up a free lock
//!   ([`driver::admission`]).
//! - One clock: time is read by the driver from tokio's clock, so paused-time tests drive it.

pub(crate) mod clock;
pub mod driver;
pub mod hold;
pub(crate) mod node;
pub mod participants;
pub mod surface;
pub mod turns;

pub use crate::uuid::{Uuid, random_uuid};

/// Seeds this thread's UUID generator (the protection prefix of every lock node it names),
/// so that a simulated schedule replays bit for bit: a test seam of the simulator (feature
/// `plant`), never for users.
#[cfg(feature = "plant")]
pub fn seed_uuids(seed: u64) {
    crate::uuid::seed_thread(seed);
}
