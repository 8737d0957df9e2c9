//! The reconstruction's output: [`History`], each lock's [`LockHistory`] of [`Event`]s, the
//! [`Anomaly`]s, and the [`Stamp`]s, kinds and causes they are made of.

use std::collections::BTreeMap;

use super::{Range, Summary};
use crate::commit::Commits;

/// A point in the server's history: a transaction's zxid and the leader's clock then (ms
/// since the Unix epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Stamp {
    /// The zxid.
    pub zxid: i64,
    /// The time, in ms since the Unix epoch.
    pub time: i64,
}

/// What kind of lock a directory is, from its nodes' names and its own name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    /// `lock-` nodes: `InterProcessMutex` (also a multi-lock's member).
    Mutex,
    /// `lock-` nodes in a semaphore's `locks` directory, once its `leases` directory has
    /// appeared beside it (until then it is a [`LockKind::Mutex`]): its inner lock.
    SemaphoreInnerLock,
    /// `__READ__` and `__WRIT__` nodes: `InterProcessReadWriteLock`.
    ReadWrite,
    /// `lease-` nodes in a semaphore's `leases` directory.
    Leases {
        /// The semaphore's size, when the caller gave it.
        max: Option<u32>,
    },
}

impl LockKind {
    /// A short name: `mutex`, `semaphore-inner-lock`, `read-write`, `semaphore-leases`.
    pub fn name(self) -> &'static str {
        match self {
            LockKind::Mutex => "mutex",
            LockKind::SemaphoreInnerLock => "semaphore-inner-lock",
            LockKind::ReadWrite => "read-write",
            LockKind::Leases { .. } => "semaphore-leases",
        }
    }
}

/// How a lock node's life ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndCause {
    /// Deleted by the session that made it (a release, or an attempt given up).
    OwnDelete,
    /// Deleted by another session: which one.
    DeletedBy(i64),
    /// Its session expired (the server's `closeSession`, xid 0).
    Expired,
    /// Its session was closed by its client.
    Closed,
}

impl EndCause {
    /// A short name: `released`, `deleted-by-other`, `expired`, `closed`.
    pub fn name(self) -> &'static str {
        match self {
            EndCause::OwnDelete => "released",
            EndCause::DeletedBy(_) => "deleted-by-other",
            EndCause::Expired => "expired",
            EndCause::Closed => "closed",
        }
    }
}

/// What happened to one lock node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// It was created: it joined the queue.
    Queued,
    /// It was in the starting tree (the snapshot), made at `made`.
    Present {
        /// Its creation (czxid, ctime).
        made: Stamp,
        /// Whether it held at the start.
        holding: bool,
    },
    /// The recipe's rule granted it.
    Granted {
        /// From its creation to this grant, in ms.
        wait_ms: i64,
    },
    /// It was deleted.
    Ended {
        /// Who or what ended it.
        cause: EndCause,
        /// Whether it held then (else it was waiting).
        held: bool,
        /// How long it held (from its grant), or waited (from its creation), in ms; `None`
        /// for a hold already there at the start.
        for_ms: Option<i64>,
        /// For a hold: the time from this end to the lock's next grant, in ms, once there
        /// is one.
        next_grant_ms: Option<i64>,
    },
}

/// One event of a lock's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// When.
    pub at: Stamp,
    /// The node's name (a child of the lock's directory).
    pub node: String,
    /// The node's session (its ephemeral owner; 0 for a persistent node).
    pub session: i64,
    /// What happened.
    pub kind: EventKind,
    /// The lock's nodes after it (the queue's length, holders included).
    pub queue: usize,
}

/// A lock node still there at the end of the history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveNode {
    /// Its name.
    pub node: String,
    /// Its session (0: persistent).
    pub session: i64,
    /// Whether it holds.
    pub held: bool,
    /// Whether its session is known to have ended, or it is persistent: nothing will ever
    /// delete it but an operator (an orphan).
    pub orphan: bool,
}

/// One lock's reconstructed history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockHistory {
    /// The lock's directory.
    pub path: String,
    /// Its kind.
    pub kind: LockKind,
    /// Its events, in zxid order.
    pub events: Vec<Event>,
    /// Its nodes at the end.
    pub live: Vec<LiveNode>,
    /// If the directory is a container left empty at the end: since when.
    pub empty_since: Option<Stamp>,
    /// Children at the end that are not this lock's nodes (another recipe's, or strays):
    /// Curator's mutex still counts them in the order, so one that sorts first blocks it.
    pub strays: Vec<String>,
    /// Its figures over the range kept ([`Audit::keep_only`]), tallied while replaying, so
    /// they are there even when the events are not ([`Audit::summary_only`]).
    ///
    /// [`Audit::keep_only`]: super::Audit::keep_only
    /// [`Audit::summary_only`]: super::Audit::summary_only
    pub summary: Summary,
}

/// Something in the record that does not fit a complete history: the servers lost part of
/// it, or the record starts mid-history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Anomaly {
    /// Zxids missing within one epoch: transactions between `after` and `before` are not in
    /// the record.
    Gap {
        /// The last zxid before the gap.
        after: i64,
        /// The first zxid after it.
        before: i64,
    },
    /// A transaction deleted a node the history does not have (made before the record
    /// starts, or a lost transaction).
    UnknownNode {
        /// The transaction.
        zxid: i64,
        /// The node.
        path: String,
    },
    /// The servers forgot history (as the chaos judge detects it): a create under `dir` set
    /// its children's version to `cversion`, not above the `had` an earlier create in the
    /// record had set, so the server that made it lacked the transactions between (a
    /// sequence number handed out twice: two nodes may both have been first).
    Forgotten {
        /// The create that shows it.
        zxid: i64,
        /// The directory.
        dir: String,
        /// The children's version it set.
        cversion: i32,
        /// The version the record had reached.
        had: i32,
    },
    /// More nodes held at once than the lock allows (two in a mutex, a writer with anyone):
    /// a node granted kept its grant while a node that sorts before it appeared, which a
    /// sequence handed out twice (lost history) or a wrapped counter makes.
    Overlap {
        /// Where it began.
        zxid: i64,
        /// The lock.
        dir: String,
        /// The nodes holding then.
        holders: Vec<String>,
    },
    /// Members' logs hold different transactions at one zxid: one member's history was
    /// truncated and replaced (the first member's is applied).
    Diverged {
        /// The zxid.
        zxid: i64,
    },
    /// A zxid logged by a majority of the members after one of its epoch that was not: the
    /// logs contradict the order proposals commit in (a member's log lost a committed
    /// transaction, or the ensemble's size given is wrong). It is applied.
    CommittedAfterUncommitted {
        /// The zxid logged by a majority.
        zxid: i64,
        /// The epoch's uncommitted zxid before it.
        uncommitted: i64,
    },
    /// A zxid at or below one already applied (the files overlap); the transaction is
    /// skipped.
    Repeated {
        /// The zxid.
        zxid: i64,
    },
}

/// The whole reconstruction's result.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct History {
    /// Every lock, by path.
    pub locks: Vec<LockHistory>,
    /// The zxid of the starting tree, if there was one.
    pub start_zxid: Option<i64>,
    /// The first and the last transaction applied.
    pub first: Option<Stamp>,
    /// The last transaction applied.
    pub last: Option<Stamp>,
    /// How many transactions were applied.
    pub txns: u64,
    /// What does not fit.
    pub anomalies: Vec<Anomaly>,
    /// The negotiated timeout (ms) of every session the record knows (the starting tree's and
    /// those created since): an expired holder was last heard from about that long before
    /// its expiry.
    pub session_timeouts: BTreeMap<i64, i32>,
    /// What the commit rule decided, when members' logs were merged
    /// ([`crate::commit::merge`]): transactions left out as never committed, those applied
    /// unconfirmed, or that the rule could not be applied.
    pub commits: Option<Commits>,
    /// The range of events kept and tallied.
    pub kept: Range,
    /// Whether the events were stored ([`Audit::summary_only`] stores none).
    ///
    /// [`Audit::summary_only`]: super::Audit::summary_only
    pub events_stored: bool,
}
