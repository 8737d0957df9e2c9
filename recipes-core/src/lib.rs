//! Curator-compatible lock logic with no IO and no clock: node names, ordering, predicates,
//! and the recipes' state machines. Not a lock you can hold: use `recipe-mutex`,
//! `recipe-rwlock`, `recipe-semaphore` or `recipe-multilock`, which drive these machines
//! against a ZooKeeper session.
//!
//! Everything here follows Apache Curator 5.4's recipes to the byte, so that our locks and
//! Curator's exclude each other on the same paths: node names `_c_<uuid>-<lockName><seq>`
//! ([`name`]), Curator's sort rule, the fair-lock predicate ([`predicate`]), and the acquire
//! sequence ([`AcquireMachine`]), except that the create and the first listing travel
//! together.
//!
//! Every recipe's machine implements [`Machine`]: ops out ([`Op`]); replies, watch events,
//! connection changes and time in ([`Input`]); an [`Outcome`] and the [`Cleanup`]s still owed.
//! The read/write lock's predicates and its downgrade are in [`rwlock`]; the semaphore's
//! machine (an inner lock, then leases counted) in [`semaphore`].
//! [`Runner`] runs any machine and checks after every input that it is not idle by accident;
//! the async driver in `recipe-mutex` and the simulator both use it.

pub mod acquire;
pub mod cleanup;
pub mod cohort;
pub mod machine;
pub mod name;
pub mod op;
pub mod participants;
#[cfg(feature = "plant")]
pub mod plant;
#[cfg(not(feature = "plant"))]
mod plant;
mod plant_switch;
pub mod predicate;
pub mod queue;
pub mod runner;
pub mod rwlock;
mod schedule;
pub mod semaphore;

pub use acquire::{AcquireMachine, Held, child_path};
pub use cleanup::CleanupMachine;
pub use machine::{Cleanup, Failure, Input, Machine, Outcome};
pub use op::{Connection, NodeMode, Op, Reply, WatchEvent, WatchKind, ZkError};
pub use predicate::{Exclusive, NodeMissing, Predicate, Verdict};
pub use runner::{Runner, Stuck};
pub use rwlock::{DowngradeMachine, ReadPredicate, WritePredicate};
pub use schedule::{DEADLINE_GRACE, RETRY_DELAY};
pub use semaphore::{MaxLeases, SemaphoreMachine};

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests;
