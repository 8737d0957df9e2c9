//! [`Recipe`]: what the simulated clients take (which machines, on which paths) and what may
//! hold at once.

use std::time::Instant;

use bytes::Bytes;
use recipes_core::{
    AcquireMachine, DowngradeMachine, Exclusive, Held, Machine, ReadPredicate, WritePredicate,
};

/// A boxed acquire machine: the real ones, or a planted bug wrapping one.
pub type BoxedAttempt = Box<dyn Machine<Output = Held> + Send>;

/// Makes the machine for one attempt: lock `base`, protection id `uuid`, optional deadline.
pub type Factory =
    fn(kind: HoldKind, base: &str, uuid: &str, deadline: Option<Instant>) -> BoxedAttempt;

/// How a hold counts against others on the same lock path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HoldKind {
    /// A mutex, a write lock: alone.
    Exclusive,
    /// A read lock: with other readers.
    Shared,
}

/// The recipes the simulator runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recipe {
    /// `InterProcessMutex` on one path.
    Mutex,
    /// `InterProcessReadWriteLock` on one path: readers, writers, downgrades.
    ReadWrite,
    /// `InterProcessMultiLock` over mutexes on `members` paths, each task taking a random
    /// subset in canonical order.
    MultiLock {
        /// How many member paths there are.
        members: usize,
    },
}

impl Recipe {
    /// Every recipe, as `cargo xtask sim` runs them by default.
    pub const ALL: [Recipe; 3] = [
        Recipe::Mutex,
        Recipe::ReadWrite,
        Recipe::MultiLock { members: 3 },
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Recipe::Mutex => "mutex",
            Recipe::ReadWrite => "rwlock",
            Recipe::MultiLock { .. } => "multilock",
        }
    }

    /// The recipe called `name`.
    pub fn parse(name: &str) -> Option<Recipe> {
        Recipe::ALL.into_iter().find(|r| r.name() == name)
    }

    /// The lock paths the clients use.
    pub fn paths(self) -> Vec<String> {
        match self {
            Recipe::Mutex => vec!["/locks/m".into()],
            Recipe::ReadWrite => vec!["/locks/rw".into()],
            Recipe::MultiLock { members } => (0..members.max(1))
                .map(|i| format!("/locks/multi/{i}"))
                .collect(),
        }
    }

    /// The real machines.
    pub fn factory(self) -> Factory {
        match self {
            Recipe::Mutex | Recipe::MultiLock { .. } => real_mutex,
            Recipe::ReadWrite => real_rwlock,
        }
    }
}

fn real_mutex(_: HoldKind, base: &str, uuid: &str, deadline: Option<Instant>) -> BoxedAttempt {
    Box::new(AcquireMachine::new(
        base,
        Exclusive::mutex(),
        uuid,
        Bytes::new(),
        deadline,
    ))
}

fn real_rwlock(kind: HoldKind, base: &str, uuid: &str, deadline: Option<Instant>) -> BoxedAttempt {
    match kind {
        HoldKind::Exclusive => Box::new(AcquireMachine::new(
            base,
            WritePredicate,
            uuid,
            Bytes::new(),
            deadline,
        )),
        HoldKind::Shared => Box::new(AcquireMachine::new(
            base,
            ReadPredicate,
            uuid,
            Bytes::new(),
            deadline,
        )),
    }
}

/// The downgrade machine for a write holder's read lock.
pub fn downgrade(
    base: &str,
    write_node: &str,
    write_czxid: i64,
    uuid: &str,
    deadline: Option<Instant>,
) -> Option<BoxedAttempt> {
    let name = write_node.rsplit('/').next()?;
    DowngradeMachine::new(base, name, write_czxid, uuid, Bytes::new(), deadline)
        .map(|m| Box::new(m) as BoxedAttempt)
}
