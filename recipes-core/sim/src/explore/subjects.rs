//! [`Subject`]: one machine set up for exploration: its directories, the nodes that exist
//! before it starts, what other clients may create, and the explorer's grant rule for it.
//! One constructor per machine of recipes-core ([`mutex`], [`read`], [`write()`],
//! [`semaphore`], [`downgrade`], [`cleanup`]).

use std::rc::Rc;
use std::time::Instant;

use bytes::Bytes;
use recipes_core::semaphore::MaxLeases;
use recipes_core::{
    AcquireMachine, Cleanup, CleanupMachine, DowngradeMachine, Exclusive, Held, ReadPredicate,
    SemaphoreMachine, WritePredicate,
};

use super::grant::Grant;

/// Our attempt's protection id.
pub const OUR_UUID: &str = "3f0c6a52-8f7e-4b1e-9a53-2d6f0e1c9b7a";

/// The protection id of another client `k` (1, 2, ...).
pub fn other_uuid(k: u8) -> String {
    format!("00000000-0000-4000-8000-{k:012}")
}

/// The protection id of an earlier attempt or hold of ours (`k`: 1, 2, ...).
pub fn earlier_uuid(k: u8) -> String {
    format!("11111111-1111-4111-8111-{k:012}")
}

/// What a machine's output holds, as lock nodes.
pub trait Holds {
    /// The nodes held.
    fn holds(&self) -> Vec<Held>;
}

impl Holds for Held {
    fn holds(&self) -> Vec<Held> {
        vec![self.clone()]
    }
}

impl Holds for Vec<Held> {
    fn holds(&self) -> Vec<Held> {
        self.clone()
    }
}

impl Holds for () {
    fn holds(&self) -> Vec<Held> {
        Vec::new()
    }
}

/// A node of ours that exists before the machine starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Before {
    /// Its directory (an index into [`Subject::dirs`]).
    pub dir: usize,
    /// Its name, or its name prefix if `sequential`.
    pub name: String,
    /// Whether the server appends a sequence number.
    pub sequential: bool,
    /// It belongs to a hold the machine does not own (the downgrade's write node): never
    /// counted as left behind.
    pub kept: bool,
}

/// Makes the machine: given its deadline and the nodes of [`Subject::before`] as created.
pub type Make<M> = Rc<dyn Fn(Option<Instant>, &[Held]) -> M>;

/// One machine set up for exploration.
#[derive(Clone)]
pub struct Subject<M> {
    /// Its name (`mutex`, `read`, ...).
    pub name: &'static str,
    /// The lock directories (they exist, with their parents).
    pub dirs: Vec<String>,
    /// What another client may create: a directory index and a lock name.
    pub foreign: Vec<(usize, &'static str)>,
    /// Nodes of ours that exist before the start.
    pub before: Vec<Before>,
    /// When the server grants a node the machine holds.
    pub grant: Grant,
    /// Whether the machine takes a deadline (a cleanup runs to the end).
    pub timed: bool,
    /// Makes the machine.
    pub make: Make<M>,
}

impl<M: 'static> Subject<M> {
    /// The same set-up with the machine wrapped by `wrap` (a negative control).
    pub fn wrap<W>(self, wrap: impl Fn(M) -> W + 'static) -> Subject<W> {
        let make = self.make;
        Subject {
            name: self.name,
            dirs: self.dirs,
            foreign: self.foreign,
            before: self.before,
            grant: self.grant,
            timed: self.timed,
            make: Rc::new(move |deadline, before| wrap(make(deadline, before))),
        }
    }
}

const LOCK: &str = "/locks/a";

fn fair<P: recipes_core::Predicate + Clone + 'static>(
    name: &'static str,
    predicate: P,
    foreign: Vec<(usize, &'static str)>,
    grant: Grant,
) -> Subject<AcquireMachine<P>> {
    Subject {
        name,
        dirs: vec![LOCK.to_owned()],
        foreign,
        before: Vec::new(),
        grant,
        timed: true,
        make: Rc::new(move |deadline, _| {
            AcquireMachine::new(LOCK, predicate.clone(), OUR_UUID, Bytes::new(), deadline)
        }),
    }
}

const READ_WRITE: [(usize, &str); 2] = [(0, "__READ__"), (0, "__WRIT__")];

/// `InterProcessMutex`'s attempt on `/locks/a`, other clients' `lock-` nodes beside it.
pub fn mutex() -> Subject<AcquireMachine<Exclusive>> {
    fair(
        "mutex",
        Exclusive::mutex(),
        vec![(0, "lock-")],
        Grant::First,
    )
}

/// The read lock's attempt, other clients' read and write nodes beside it.
pub fn read() -> Subject<AcquireMachine<ReadPredicate>> {
    fair(
        "read",
        ReadPredicate,
        READ_WRITE.to_vec(),
        Grant::NoWriteBefore,
    )
}

/// The write lock's attempt, other clients' read and write nodes beside it.
pub fn write() -> Subject<AcquireMachine<WritePredicate>> {
    fair("write", WritePredicate, READ_WRITE.to_vec(), Grant::First)
}

/// One lease of a semaphore of one (`InterProcessSemaphoreMutex`) at `/sem`: other clients
/// may take a lease (without the inner lock: a count beside ours) or queue on the inner lock.
pub fn semaphore() -> Subject<SemaphoreMachine> {
    Subject {
        name: "semaphore",
        dirs: vec!["/sem/locks".to_owned(), "/sem/leases".to_owned()],
        foreign: vec![(1, "lease-"), (0, "lock-")],
        before: Vec::new(),
        grant: Grant::Count(1),
        timed: true,
        make: Rc::new(|deadline, _| {
            SemaphoreMachine::new(
                "/sem",
                1,
                MaxLeases::new(1),
                OUR_UUID,
                Bytes::new(),
                deadline,
            )
        }),
    }
}

/// A write holder of `/locks/a` (its node made before the start) downgrades to a read lock.
pub fn downgrade() -> Subject<DowngradeMachine> {
    let write = format!("_c_{}-__WRIT__", earlier_uuid(1));
    Subject {
        name: "downgrade",
        dirs: vec![LOCK.to_owned()],
        foreign: READ_WRITE.to_vec(),
        before: vec![Before {
            dir: 0,
            name: write.clone(),
            sequential: true,
            kept: true,
        }],
        grant: Grant::Beside(format!("{LOCK}/{write}0000000000")),
        timed: true,
        make: Rc::new(|deadline, before| {
            let (name, czxid) = match before.first() {
                Some(h) => (h.path.rsplit('/').next().unwrap_or_default(), h.czxid),
                None => ("", 0),
            };
            DowngradeMachine::new(LOCK, name, czxid, OUR_UUID, Bytes::new(), deadline)
                .expect("the set-up's write node is a write node")
        }),
    }
}

/// A cleanup of two nodes of ours left by earlier attempts: one by its path, one by its
/// protection prefix (a lost create reply); another client's nodes beside them.
pub fn cleanup() -> Subject<CleanupMachine> {
    let node = |k| Before {
        dir: 0,
        name: format!("_c_{}-lock-", earlier_uuid(k)),
        sequential: true,
        kept: false,
    };
    Subject {
        name: "cleanup",
        dirs: vec![LOCK.to_owned()],
        foreign: vec![(0, "lock-")],
        before: vec![node(1), node(2)],
        grant: Grant::Nothing,
        timed: false,
        make: Rc::new(|_, before| {
            let mut owed: Vec<Cleanup> = before
                .first()
                .map(|h| Cleanup::Delete(h.path.clone()))
                .into_iter()
                .collect();
            owed.push(Cleanup::FindAndDelete {
                base: LOCK.to_owned(),
                prefix: format!("_c_{}-", earlier_uuid(2)),
            });
            CleanupMachine::new(owed)
        }),
    }
}
