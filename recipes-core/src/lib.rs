//! Curator-compatible lock logic with no IO and no clock: node names, ordering, predicates,
//! acquire machines. Not a lock you can hold: use `recipe-mutex`, `recipe-rwlock`,
//! `recipe-semaphore` or `recipe-multilock`, which drive these machines against a ZooKeeper
//! session.
//!
//! Everything here follows Apache Curator 5.4's recipes to the byte, so that our locks and
//! Curator's exclude each other on the same paths: node names `_c_<uuid>-<lockName><seq>`
//! ([`name`]), Curator's sort rule, the fair-lock predicate ([`predicate`]), and the acquire
//! sequence ([`AcquireMachine`]) — except that the create and the first listing travel
//! together.

pub mod acquire;
pub mod name;
pub mod op;
pub mod predicate;

pub use acquire::{AcquireMachine, Cleanup, Failure, Outcome};
pub use op::{Connection, Op, Reply, ZkError};
pub use predicate::{Exclusive, NodeMissing, Predicate, Verdict};

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests;
