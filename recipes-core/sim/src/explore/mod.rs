//! Bounded exhaustive exploration of recipes-core's machines: every reachable state up to a
//! depth, instead of random schedules (issue 34).
//!
//! Each machine runs in a [`recipes_core::Runner`] against the explorer's own small model
//! ([`model`]): one server holding the lock's directories (their parents exist, nothing is
//! removed), a sequence counter per directory, nodes owned by our session or by other
//! clients, a global zxid; our one session and the link to it as ZooKeeper and zk-client
//! behave: ops written in order and applied by the server one at a time (a step of its own,
//! so other clients' changes interleave), replies and watch notifications on one ordered
//! channel, one-shot watches set when their op is applied. A disconnect fails every op not
//! answered with `ConnectionLoss` (the server may still apply the ones it had not, until the
//! reconnect), keeps the watches the client knew of and holds back their notifications until
//! the reconnect; the machine hears `Disconnected` before or after the failures (both are
//! explored). Ops issued while disconnected fail with `NotSent`; an expiry deletes our
//! ephemerals and fails what is pending with `SessionExpired`, then `Expired` (after `Lost`,
//! or not); `Lost` may also come and the session survive. Time is virtual and moves only when
//! the machine's timer fires. Other clients create and delete their own nodes (a bounded
//! number) and may delete one of ours; the caller may abandon. Each [`Step`] is one of these
//! moves; [`Budget`] bounds the faults per run.
//!
//! Once the attempt has ended and its replies are in, a `CleanupMachine` runs what it owes
//! through the same model (faults still possible), and the run is over. [`check`] lists what
//! is checked at every step.
//!
//! Not modelled: several servers (a follower lagging behind the leader: `sync` is a no-op
//! here), several lock paths, missing parents or container removal, wrapping sequence
//! numbers, transient errors (`Transient`), read-only servers, data changes and revocation, a
//! shared semaphore count that changes (`Input::Wake`), other clients' watches. The random
//! simulator ([`crate::world`]) covers those by sampling.
//!
//! The search is breadth-first with a visited set of hashed states (the machine's `Debug`
//! output with everything else), so each state is expanded once and the first violation
//! found has a shortest trace, replayed from the start to print it.

pub mod check;
pub mod grant;
pub mod model;
mod search;
pub mod state;
pub mod subjects;

use std::time::Duration;

pub use check::{Check, Violation};
pub use grant::Grant;
pub use search::{Found, Report, explore};
pub use state::Step;
pub use subjects::Subject;

/// The faults one run may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Budget {
    /// Connection losses.
    pub disconnects: u8,
    /// Expiries and `Lost`s, together.
    pub lost_or_expiry: u8,
    /// Deletions of our nodes by another client.
    pub meddles: u8,
    /// Nodes other clients create (their deletions are free).
    pub foreign: u8,
    /// `Input::Abandon`s.
    pub abandons: u8,
}

impl Default for Budget {
    /// Two disconnects, one expiry or `Lost`, one meddle, two foreign nodes, one abandon.
    fn default() -> Self {
        Self {
            disconnects: 2,
            lost_or_expiry: 1,
            meddles: 1,
            foreign: 2,
            abandons: 1,
        }
    }
}

/// One exploration's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Steps from the start (after `Start`) explored.
    pub depth: usize,
    /// The faults per run.
    pub budget: Budget,
    /// The attempt's deadline after the start, if any.
    pub deadline: Option<Duration>,
    /// How many calm steps check 6 allows from a quiet state.
    pub probe_steps: usize,
    /// Stop (with what is explored) after this long.
    pub time_limit: Option<Duration>,
}

impl Config {
    /// Depth `depth`, the default budget, no deadline.
    pub fn new(depth: usize) -> Self {
        Self {
            depth,
            budget: Budget::default(),
            deadline: None,
            probe_steps: 64,
            time_limit: None,
        }
    }

    /// The same with a deadline `after` the start.
    pub fn with_deadline(self, after: Option<Duration>) -> Self {
        Self {
            deadline: after,
            ..self
        }
    }
}

/// The machines [`explore_named`] knows.
pub const MACHINES: [&str; 6] = [
    "mutex",
    "read",
    "write",
    "semaphore",
    "downgrade",
    "cleanup",
];

/// Whether the machine called `name` takes a deadline (all but the cleanup).
pub fn timed(name: &str) -> bool {
    name != "cleanup"
}

/// Explores the machine called `name` (one of [`MACHINES`]); `None` for an unknown name.
pub fn explore_named(name: &str, config: &Config) -> Option<Report> {
    Some(match name {
        "mutex" => explore(&subjects::mutex(), config),
        "read" => explore(&subjects::read(), config),
        "write" => explore(&subjects::write(), config),
        "semaphore" => explore(&subjects::semaphore(), config),
        "downgrade" => explore(&subjects::downgrade(), config),
        "cleanup" => explore(&subjects::cleanup(), config),
        _ => return None,
    })
}
