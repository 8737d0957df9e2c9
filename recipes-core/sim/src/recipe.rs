//! [`Recipe`]: what the simulated clients take (which machines, on which paths) and what may
//! hold at once.

use std::time::Instant;

use bytes::Bytes;
use recipes_core::{
    AcquireMachine, Cleanup, DowngradeMachine, Exclusive, Held, Input, Machine, MaxLeases, Op,
    Outcome, ReadPredicate, SemaphoreMachine, WritePredicate,
};

/// A boxed acquire machine: the real ones, or a planted bug wrapping one. It holds one node
/// (a lock) or several (a semaphore's leases).
pub type BoxedAttempt = Box<dyn Machine<Output = Vec<Held>> + Send>;

/// Makes the machine for one attempt: lock `base`, how the hold counts, how many leases
/// (semaphores), protection id `uuid`, optional deadline.
pub type Factory =
    fn(kind: HoldKind, qty: u32, base: &str, uuid: &str, deadline: Option<Instant>) -> BoxedAttempt;

/// A machine that holds one node, as one that holds a list of them.
pub fn single<M>(machine: M) -> BoxedAttempt
where
    M: Machine<Output = Held> + Send + 'static,
{
    Box::new(Single {
        machine,
        outcome: None,
    })
}

struct Single<M> {
    machine: M,
    outcome: Option<Outcome<Vec<Held>>>,
}

impl<M: Machine<Output = Held>> Machine for Single<M> {
    type Output = Vec<Held>;

    fn handle(&mut self, now: Instant, input: Input) {
        self.machine.handle(now, input);
        if self.outcome.is_none() {
            self.outcome = self.machine.outcome().map(|o| match o {
                Outcome::Held(h) => Outcome::Held(vec![h.clone()]),
                Outcome::TimedOut => Outcome::TimedOut,
                Outcome::Failed(f) => Outcome::Failed(*f),
            });
        }
    }

    fn poll_op(&mut self) -> Option<Op> {
        self.machine.poll_op()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.machine.poll_timeout()
    }

    fn outcome(&self) -> Option<&Outcome<Vec<Held>>> {
        self.outcome.as_ref()
    }

    fn cleanups(&self) -> Vec<Cleanup> {
        self.machine.cleanups()
    }

    fn releases(&self) -> Vec<Cleanup> {
        self.machine.releases()
    }
}

/// How a hold counts against others on the same lock path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HoldKind {
    /// A mutex, a write lock: alone.
    Exclusive,
    /// A read lock: with other readers.
    Shared,
    /// A semaphore's lease: at most `max` at once.
    Lease {
        /// The semaphore's maximum.
        max: u32,
    },
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
    /// `InterProcessSemaphoreV2` with `leases` leases, each task taking 1 or 2 at once.
    Semaphore {
        /// The maximum.
        leases: u32,
    },
    /// `InterProcessSemaphoreMutex`: one lease of one.
    SemaphoreMutex,
    /// `CohortMutex` (lock cohorting): in the async layer, the tasks of each session share
    /// one cohort with a bound drawn per schedule; in the machines layer (which has no
    /// cohort: it is an IO-layer batch over the mutex's machine), the mutex.
    CohortMutex,
    /// `CohortReadWriteLock` (lock cohorting on both sides): in the async layer, the tasks of
    /// each session share one cohort read/write lock (readers on one read node, writers
    /// passing one write node) with a bound drawn per schedule; in the machines layer, the
    /// read/write lock.
    CohortReadWrite,
}

impl Recipe {
    /// Every recipe, as `cargo xtask sim` runs them by default.
    pub const ALL: [Recipe; 5] = [
        Recipe::Mutex,
        Recipe::ReadWrite,
        Recipe::MultiLock { members: 3 },
        Recipe::Semaphore { leases: 2 },
        Recipe::SemaphoreMutex,
    ];

    /// The cohorts: what the async layer runs besides [`Recipe::ALL`] (the machines layer has
    /// no cohort: there each would be its recipe again).
    pub const COHORTS: [Recipe; 2] = [Recipe::CohortMutex, Recipe::CohortReadWrite];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Recipe::Mutex => "mutex",
            Recipe::ReadWrite => "rwlock",
            Recipe::MultiLock { .. } => "multilock",
            Recipe::Semaphore { .. } => "semaphore",
            Recipe::SemaphoreMutex => "semaphore-mutex",
            Recipe::CohortMutex => "cohort-mutex",
            Recipe::CohortReadWrite => "cohort-rwlock",
        }
    }

    /// The recipe called `name`.
    pub fn parse(name: &str) -> Option<Recipe> {
        Recipe::ALL
            .into_iter()
            .chain(Recipe::COHORTS)
            .find(|r| r.name() == name)
    }

    /// The lock paths the clients use.
    pub fn paths(self) -> Vec<String> {
        match self {
            Recipe::Mutex => vec!["/locks/m".into()],
            Recipe::CohortMutex => vec!["/locks/cm".into()],
            Recipe::ReadWrite => vec!["/locks/rw".into()],
            Recipe::CohortReadWrite => vec!["/locks/crw".into()],
            Recipe::MultiLock { members } => (0..members.max(1))
                .map(|i| format!("/locks/multi/{i}"))
                .collect(),
            Recipe::Semaphore { .. } | Recipe::SemaphoreMutex => vec!["/locks/sem".into()],
        }
    }

    /// The directories the recipe's nodes live in (where faults meddle, where leftovers are
    /// looked for).
    pub fn dirs(self) -> Vec<String> {
        match self {
            Recipe::Semaphore { .. } | Recipe::SemaphoreMutex => self
                .paths()
                .iter()
                .flat_map(|p| [format!("{p}/locks"), format!("{p}/leases")])
                .collect(),
            _ => self.paths(),
        }
    }

    /// How a hold of this recipe counts (the read/write lock draws its kind per attempt).
    pub fn hold_kind(self) -> HoldKind {
        match self {
            Recipe::Semaphore { leases } => HoldKind::Lease { max: leases },
            Recipe::SemaphoreMutex => HoldKind::Lease { max: 1 },
            _ => HoldKind::Exclusive,
        }
    }

    /// The real machines.
    pub fn factory(self) -> Factory {
        match self {
            Recipe::Mutex | Recipe::CohortMutex | Recipe::MultiLock { .. } => real_mutex,
            Recipe::ReadWrite | Recipe::CohortReadWrite => real_rwlock,
            Recipe::Semaphore { .. } | Recipe::SemaphoreMutex => real_semaphore,
        }
    }
}

fn real_mutex(
    _: HoldKind,
    _: u32,
    base: &str,
    uuid: &str,
    deadline: Option<Instant>,
) -> BoxedAttempt {
    single(AcquireMachine::new(
        base,
        Exclusive::mutex(),
        uuid,
        Bytes::new(),
        deadline,
    ))
}

fn real_semaphore(
    kind: HoldKind,
    qty: u32,
    base: &str,
    uuid: &str,
    deadline: Option<Instant>,
) -> BoxedAttempt {
    let max = match kind {
        HoldKind::Lease { max } => max,
        _ => 1,
    };
    Box::new(SemaphoreMachine::new(
        base,
        qty,
        MaxLeases::new(max),
        uuid,
        Bytes::new(),
        deadline,
    ))
}

fn real_rwlock(
    kind: HoldKind,
    _: u32,
    base: &str,
    uuid: &str,
    deadline: Option<Instant>,
) -> BoxedAttempt {
    match kind {
        HoldKind::Exclusive | HoldKind::Lease { .. } => single(AcquireMachine::new(
            base,
            WritePredicate,
            uuid,
            Bytes::new(),
            deadline,
        )),
        HoldKind::Shared => single(AcquireMachine::new(
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
    DowngradeMachine::new(base, name, write_czxid, uuid, Bytes::new(), deadline).map(single)
}
