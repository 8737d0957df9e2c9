//! The reconstruction: a starting tree, then transactions in zxid order, in; every lock's
//! queue, grants and ends out. Pure: no files, no clock (times are the leader's, from the
//! transactions).
//!
//! - A directory is a lock once a child named as a Curator lock node (`…lock-<seq>`,
//!   `…__READ__<seq>`, `…__WRIT__<seq>`, `…lease-<seq>` under `leases`) appears in it.
//! - After every transaction, each lock it touched is judged again with recipes-core's rule
//!   for its kind ([`recipes_core::participants::places`]); a node that now holds and did not
//!   is granted at that transaction's zxid and time.
//! - A semaphore's lease holds, by Curator's rule, when the leases counted with the inner lock
//!   held are at most the semaphore's size, a number the clients keep to themselves. Given it
//!   ([`Audit::with_leases`]), a lease holds while fewer than that many leases sort before it;
//!   without it, a lease is taken as granted when its session lets go of the inner lock
//!   (`<path>/locks`) it held when it made the lease, with the lease still there: Curator lets
//!   go of the inner lock once the count passed, or after deleting the lease when it gave up.
//! - A node's end says who ended it: its own session's delete, another session's delete, or
//!   its session's end. A `closeSession` the server logs for an expired session carries xid 0
//!   (`ZooKeeperServer.expire`), a client's own close its next xid, which is never 0.
//! - A read/write downgrade's read node (its write node's sequence) is ordered before the
//!   write node it ties with: the writer's own read, holding while the write does.
//! - What does not fit a sound history is an [`Anomaly`]: more holders than the lock allows,
//!   a sequence handed out twice (the servers forgot transactions, the chaos judge's sign),
//!   members' logs that differ at a zxid, gaps, deletes of unknown nodes.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use recipes_core::name::{MUTEX_LOCK_NAME, sequence, sort_children};
use recipes_core::participants::{Rule, Standing, places};
use recipes_core::rwlock::{READ_LOCK_NAME, WRITE_LOCK_NAME, rw_sort, rw_sort_key};
use recipes_core::semaphore::{LEASE_NAME, LEASES_DIR, LOCKS_DIR};
use zk_proto::snapshot::CONTAINER_OWNER;
use zk_proto::txnlog::{TxnBody, TxnEntry};

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

/// Which events to report: those whose time falls within `from..=to` (ms since the epoch).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Range {
    /// The earliest, if any.
    pub from: Option<i64>,
    /// The latest, if any.
    pub to: Option<i64>,
}

impl Range {
    /// Whether `event` falls in the range.
    pub fn contains(&self, event: &Event) -> bool {
        self.from.is_none_or(|f| event.at.time >= f) && self.to.is_none_or(|t| event.at.time <= t)
    }
}

/// One lock's figures over the events in a range.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Nodes created.
    pub queued: usize,
    /// Grants.
    pub grants: usize,
    /// The longest queue (nodes of the lock, holders included).
    pub max_queue: usize,
    /// The longest wait before a grant, ms.
    pub max_wait_ms: Option<i64>,
    /// The mean wait before a grant, ms.
    pub mean_wait_ms: Option<i64>,
    /// Holds ended by their own session's delete.
    pub released: usize,
    /// Holds ended by another session's delete.
    pub deleted_by_other: usize,
    /// Holds ended by their session's expiry.
    pub expired: usize,
    /// Holds ended by their session's close.
    pub closed: usize,
    /// Waits that ended without a grant.
    pub abandoned: usize,
    /// For each hold ended by expiry: the time to the next grant, ms (`None`: none came).
    pub expiry_to_next_grant_ms: Vec<Option<i64>>,
    /// Nodes still there at the end.
    pub live: usize,
    /// Of those, orphans.
    pub orphans: usize,
}

/// Tallies a lock's events into a [`Summary`], one at a time.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    summary: Summary,
    wait_sum: i64,
    waits: i64,
    /// Expiries whose next grant is still to come: (index in `expiry_to_next_grant_ms`,
    /// the end's time).
    pending: Vec<(usize, i64)>,
}

impl Tally {
    /// Counts `e`.
    pub fn add(&mut self, e: &Event) {
        let s = &mut self.summary;
        s.max_queue = s.max_queue.max(e.queue);
        match &e.kind {
            EventKind::Queued => s.queued += 1,
            EventKind::Present { .. } => {}
            EventKind::Granted { wait_ms } => {
                s.grants += 1;
                s.max_wait_ms = Some(s.max_wait_ms.map_or(*wait_ms, |m| m.max(*wait_ms)));
                self.wait_sum += wait_ms;
                self.waits += 1;
            }
            EventKind::Ended {
                cause,
                held: true,
                next_grant_ms,
                ..
            } => match cause {
                EndCause::OwnDelete => s.released += 1,
                EndCause::DeletedBy(_) => s.deleted_by_other += 1,
                EndCause::Expired => {
                    s.expired += 1;
                    if next_grant_ms.is_none() {
                        self.pending
                            .push((s.expiry_to_next_grant_ms.len(), e.at.time));
                    }
                    s.expiry_to_next_grant_ms.push(*next_grant_ms);
                }
                EndCause::Closed => s.closed += 1,
            },
            EventKind::Ended { held: false, .. } => s.abandoned += 1,
        }
    }

    /// The lock's next grant came at `time`: the expiries waiting for one learn it.
    pub fn granted(&mut self, time: i64) {
        for (i, ended) in self.pending.drain(..) {
            if let Some(slot) = self.summary.expiry_to_next_grant_ms.get_mut(i) {
                *slot = Some(time - ended);
            }
        }
    }

    /// The figures, with the nodes left at the end.
    pub fn finish(mut self, live: &[LiveNode]) -> Summary {
        self.summary.mean_wait_ms = (self.waits > 0).then(|| self.wait_sum / self.waits);
        self.summary.live = live.len();
        self.summary.orphans = live.iter().filter(|l| l.orphan).count();
        self.summary
    }
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
    /// The range of events kept and tallied.
    pub kept: Range,
    /// Whether the events were stored ([`Audit::summary_only`] stores none).
    pub events_stored: bool,
}

/// A node of the tree, as much as the audit needs.
#[derive(Debug, Clone, Copy)]
struct Meta {
    made: Stamp,
    owner: i64,
}

/// A lock node the audit follows.
#[derive(Debug, Clone)]
struct Entry {
    made: Stamp,
    session: i64,
    /// When it was granted (`None`: waiting); for a hold at the start, the start.
    granted: Option<Stamp>,
    /// Held at the start, grant time unknown.
    from_start: bool,
    /// For a lease without a known size: the inner lock node its session held when it made
    /// the lease.
    inner: Option<String>,
}

#[derive(Debug)]
struct Lock {
    kind: LockKind,
    entries: BTreeMap<String, Entry>,
    events: Vec<Event>,
    /// Ends of holds waiting for the lock's next grant (indices into `events`).
    awaiting_grant: Vec<usize>,
    empty_since: Option<Stamp>,
    /// Whether more hold than the lock allows (reported when it starts).
    overlapping: bool,
    /// The events kept.
    keep: Range,
    /// Whether events are stored (else only tallied).
    store: bool,
    /// The figures over `keep`.
    tally: Tally,
}

impl Lock {
    /// Tallies `event` and keeps it if it is in the range kept: its index if stored.
    fn record(&mut self, event: Event) -> Option<usize> {
        if !self.keep.contains(&event) {
            return None;
        }
        self.tally.add(&event);
        self.store.then(|| {
            self.events.push(event);
            self.events.len() - 1
        })
    }
}

/// The reconstruction: feed it the starting tree ([`Audit::add_node`], then
/// [`Audit::start`]), then every transaction in zxid order ([`Audit::apply`]), then take
/// the [`History`] ([`Audit::finish`]).
///
/// # Examples
///
/// ```
/// use zk_lock_audit::replay::{Audit, EndCause, EventKind};
/// use zk_proto::OpCode;
/// use zk_proto::txnlog::{CreateTxn, DeleteTxn, TxnBody, TxnEntry, TxnHeader};
///
/// let txn = |zxid, time, session, body: TxnBody| TxnEntry {
///     header: TxnHeader { client_id: session, cxid: 1, zxid, time, op: body.op_code() },
///     body,
///     digest: None,
/// };
/// let create = |path: &str| TxnBody::Create(CreateTxn {
///     path: path.into(), ephemeral: true, ..CreateTxn::default()
/// });
/// let mut audit = Audit::new(Vec::new());
/// audit.start(None);
/// audit.apply(&txn(1, 1000, 0xa, create("/l/_c_1-lock-0000000000")));
/// audit.apply(&txn(2, 1100, 0xb, create("/l/_c_2-lock-0000000001")));
/// audit.apply(&txn(3, 1500, 0xa, TxnBody::Delete(DeleteTxn { path: "/l/_c_1-lock-0000000000".into() })));
/// let history = audit.finish();
/// let events = &history.locks[0].events;
/// assert_eq!(events[1].kind, EventKind::Granted { wait_ms: 0 });
/// assert_eq!(events[4].kind, EventKind::Granted { wait_ms: 400 });
/// assert!(matches!(events[3].kind, EventKind::Ended { cause: EndCause::OwnDelete, held: true, .. }));
/// ```
#[derive(Debug)]
pub struct Audit {
    /// Lock paths to follow (a lock at or under one of them); empty: every lock.
    filter: Vec<String>,
    /// Semaphore sizes by base path.
    leases: Vec<(String, u32)>,
    nodes: HashMap<String, Meta>,
    children: HashMap<String, BTreeSet<String>>,
    locks: BTreeMap<String, Lock>,
    /// The events kept (the rest are judged, then dropped).
    keep: Range,
    /// Whether events are stored (else only tallied).
    store: bool,
    /// Sessions known to have ended.
    ended: BTreeSet<i64>,
    /// The children's version the record's creates set, by directory (forgotten when the
    /// directory goes).
    cversions: HashMap<String, i32>,
    applied: Option<i64>,
    history: History,
}

/// The parent directory and the name of `path`.
fn split(path: &str) -> Option<(&str, &str)> {
    let i = path.rfind('/')?;
    let dir = path.get(..i)?;
    Some((if dir.is_empty() { "/" } else { dir }, path.get(i + 1..)?))
}

fn join(dir: &str, name: &str) -> String {
    recipes_core::child_path(dir, name)
}

/// The kind of lock `name` makes its directory `dir`, if it is a lock node's name.
fn kind_of(dir: &str, name: &str) -> Option<LockKind> {
    let base = split(dir).map(|(_, b)| b).unwrap_or_default();
    if sequence(name, READ_LOCK_NAME).is_some() || sequence(name, WRITE_LOCK_NAME).is_some() {
        Some(LockKind::ReadWrite)
    } else if base == LEASES_DIR && sequence(name, LEASE_NAME).is_some() {
        Some(LockKind::Leases { max: None })
    } else if sequence(name, MUTEX_LOCK_NAME).is_some() {
        // A semaphore's `locks` is told from a mutex of that name once `leases` appears
        // beside it.
        Some(LockKind::Mutex)
    } else {
        None
    }
}

/// Whether `name` is a node of a lock of `kind` (else foreign there).
fn is_member(kind: LockKind, name: &str) -> bool {
    match kind {
        LockKind::Mutex | LockKind::SemaphoreInnerLock => sequence(name, MUTEX_LOCK_NAME).is_some(),
        LockKind::ReadWrite => {
            sequence(name, READ_LOCK_NAME).is_some() || sequence(name, WRITE_LOCK_NAME).is_some()
        }
        LockKind::Leases { .. } => sequence(name, LEASE_NAME).is_some(),
    }
}

/// The read/write order, with a downgrade's read node (`__READ__` with its write node's
/// sequence, CURATOR-621) before the write node it sorts level with: the writer's own read,
/// which holds while its write does (Curator's order between the two is the server's listing
/// order, which the record does not keep).
fn downgrade_first(children: &mut [String]) {
    children.sort_by_key(|n| sequence(n, WRITE_LOCK_NAME).is_some());
    rw_sort(children);
}

/// What the recipe's rule says of each child: the names that hold.
fn holders(kind: LockKind, children: Vec<String>) -> Vec<String> {
    let placed = match kind {
        LockKind::Mutex | LockKind::SemaphoreInnerLock => places(
            children,
            |c| sort_children(c, MUTEX_LOCK_NAME),
            |n| is_member(kind, n).then_some(Rule::Exclusive { max: 1 }),
        ),
        LockKind::ReadWrite => places(children, downgrade_first, |n| {
            if sequence(n, WRITE_LOCK_NAME).is_some() {
                Some(Rule::Write)
            } else if sequence(n, READ_LOCK_NAME).is_some() {
                Some(Rule::Read)
            } else {
                None
            }
        }),
        LockKind::Leases { max: Some(max) } => {
            let max = usize::try_from(max).unwrap_or(usize::MAX);
            places(
                children,
                |c| sort_children(c, LEASE_NAME),
                |n| is_member(kind, n).then_some(Rule::Exclusive { max }),
            )
        }
        LockKind::Leases { max: None } => Vec::new(),
    };
    placed
        .into_iter()
        .filter(|p| p.standing == Standing::Holds)
        .map(|p| p.name)
        .collect()
}

impl Audit {
    /// An audit of the locks at or under `filter`'s paths (every lock if empty).
    pub fn new(filter: Vec<String>) -> Self {
        Audit {
            filter,
            leases: Vec::new(),
            nodes: HashMap::new(),
            children: HashMap::new(),
            locks: BTreeMap::new(),
            keep: Range::default(),
            store: true,
            ended: BTreeSet::new(),
            cversions: HashMap::new(),
            applied: None,
            history: History::default(),
        }
    }

    /// Judges the semaphore at `base` (its `leases` directory) by the count rule with `max`
    /// leases.
    pub fn with_leases(mut self, base: &str, max: u32) -> Self {
        self.leases
            .push((base.trim_end_matches('/').to_owned(), max));
        self
    }

    /// Keeps only the events within `range` (every lock is still judged from the whole
    /// record): memory then grows with the events in the range, not with the record.
    pub fn keep_only(mut self, range: Range) -> Self {
        self.keep = range;
        self.history.kept = range;
        self
    }

    /// Stores no events, only each lock's figures ([`LockHistory::summary`]) and the state at
    /// the start: memory is then the tree's, whatever the record's length.
    pub fn summary_only(mut self) -> Self {
        self.store = false;
        self
    }

    fn wanted(&self, dir: &str) -> bool {
        self.filter.is_empty()
            || self.filter.iter().any(|f| {
                let f = f.trim_end_matches('/');
                f.is_empty()
                    || dir == f
                    || dir
                        .strip_prefix(f)
                        .is_some_and(|rest| rest.starts_with('/'))
            })
    }

    /// Adds a session alive in the starting tree, with its timeout in ms.
    pub fn add_session(&mut self, id: i64, timeout_ms: i32) {
        self.history.session_timeouts.insert(id, timeout_ms);
    }

    /// Adds a node of the starting tree (a snapshot's node: its path, creation and ephemeral
    /// owner). Parents before children; the root (`""` or `"/"`) is skipped.
    pub fn add_node(&mut self, path: &str, made: Stamp, owner: i64) {
        if path.is_empty() || path == "/" {
            return;
        }
        self.insert(path, made, owner);
    }

    /// Ends the starting tree: its locks are judged as they stand, at `zxid` (the snapshot's;
    /// `None` when there is no starting tree). A lease of a semaphore whose size is not known
    /// holds at the start unless its session holds the inner lock (then it waits for the
    /// count).
    pub fn start(&mut self, zxid: Option<i64>) {
        self.history.start_zxid = zxid;
        self.applied = zxid;
        let at = Stamp {
            zxid: zxid.unwrap_or(0),
            time: 0,
        };
        let dirs: Vec<String> = self.locks.keys().cloned().collect();
        // The inner locks first: the leases' standing depends on them.
        let (leases, others): (Vec<String>, Vec<String>) = dirs.into_iter().partition(|d| {
            self.locks
                .get(d)
                .is_some_and(|l| l.kind == LockKind::Leases { max: None })
        });
        for dir in others.into_iter().chain(leases) {
            let kids: Vec<String> = self
                .children
                .get(&dir)
                .map(|k| k.iter().cloned().collect())
                .unwrap_or_default();
            let Some(kind) = self.locks.get(&dir).map(|l| l.kind) else {
                continue;
            };
            let held: Vec<(String, Option<String>)> = if kind == (LockKind::Leases { max: None }) {
                let sessions: Vec<(String, i64)> = self
                    .locks
                    .get(&dir)
                    .map(|l| {
                        l.entries
                            .iter()
                            .map(|(n, e)| (n.clone(), e.session))
                            .collect()
                    })
                    .unwrap_or_default();
                sessions
                    .into_iter()
                    .map(|(n, s)| (n, self.inner_lock_of(&dir, s)))
                    .collect()
            } else {
                holders(kind, kids).into_iter().map(|n| (n, None)).collect()
            };
            let Some(lock) = self.locks.get_mut(&dir) else {
                continue;
            };
            let queue = lock.entries.len();
            // Kept whatever the range: the state the record starts from.
            let mut present = Vec::new();
            for (name, entry) in lock.entries.iter_mut() {
                let holding = held.iter().any(|(n, inner)| n == name && inner.is_none());
                if holding {
                    entry.granted = Some(at);
                    entry.from_start = true;
                } else if let Some((_, inner)) = held.iter().find(|(n, _)| n == name) {
                    entry.inner = inner.clone();
                }
                present.push(Event {
                    at: entry.made,
                    node: name.clone(),
                    session: entry.session,
                    kind: EventKind::Present {
                        made: entry.made,
                        holding,
                    },
                    queue,
                });
            }
            for e in &present {
                if lock.keep.contains(e) {
                    lock.tally.add(e);
                }
            }
            lock.events.extend(present);
        }
    }

    fn insert(&mut self, path: &str, made: Stamp, owner: i64) -> Option<String> {
        self.nodes.insert(path.to_owned(), Meta { made, owner });
        let (dir, name) = split(path)?;
        self.children
            .entry(dir.to_owned())
            .or_default()
            .insert(name.to_owned());
        if !self.locks.contains_key(dir) {
            let mut kind = kind_of(dir, name)?;
            if !self.wanted(dir) {
                return None;
            }
            if let LockKind::Leases { max } = &mut kind {
                let base = split(dir).map(|(b, _)| b).unwrap_or_default();
                *max = self.leases.iter().find(|(b, _)| b == base).map(|(_, n)| *n);
                if let Some(inner) = self.locks.get_mut(&join(base, LOCKS_DIR)) {
                    inner.kind = LockKind::SemaphoreInnerLock;
                }
            }
            self.locks.insert(
                dir.to_owned(),
                Lock {
                    kind,
                    entries: BTreeMap::new(),
                    events: Vec::new(),
                    awaiting_grant: Vec::new(),
                    empty_since: None,
                    overlapping: false,
                    keep: self.keep,
                    store: self.store,
                    tally: Tally::default(),
                },
            );
        }
        let inner = self.inner_lock_of(dir, owner);
        let lock = self.locks.get_mut(dir)?;
        if !is_member(lock.kind, name) {
            return Some(dir.to_owned());
        }
        lock.entries.insert(
            name.to_owned(),
            Entry {
                made,
                session: owner,
                granted: None,
                from_start: false,
                inner,
            },
        );
        Some(dir.to_owned())
    }

    /// For a lease in `dir` (a `leases` directory without a known size) made by `session`:
    /// the inner lock node that session holds.
    fn inner_lock_of(&self, dir: &str, session: i64) -> Option<String> {
        let lock = self.locks.get(dir)?;
        if lock.kind != (LockKind::Leases { max: None }) {
            return None;
        }
        let base = split(dir)?.0;
        let inner_dir = join(base, LOCKS_DIR);
        let inner = self.locks.get(&inner_dir)?;
        inner
            .entries
            .iter()
            .find(|(_, e)| e.session == session && e.granted.is_some())
            .map(|(name, _)| join(&inner_dir, name))
    }

    /// Applies one transaction. Transactions must come in zxid order; one at or below the
    /// last applied is skipped, and noted ([`Anomaly::Repeated`]) unless it is at or below the
    /// starting tree's zxid (a log overlapping its snapshot, as logs do). Within an epoch,
    /// a zxid that does not follow the last applied is a gap ([`Anomaly::Gap`]).
    pub fn apply(&mut self, e: &TxnEntry) {
        let at = Stamp {
            zxid: e.header.zxid,
            time: e.header.time,
        };
        if let Some(last) = self.applied {
            if at.zxid <= last {
                if self.history.start_zxid.is_none_or(|s| last > s) {
                    self.history
                        .anomalies
                        .push(Anomaly::Repeated { zxid: at.zxid });
                }
                return;
            }
            if at.zxid >> 32 == last >> 32 && at.zxid != last + 1 {
                self.history.anomalies.push(Anomaly::Gap {
                    after: last,
                    before: at.zxid,
                });
            }
        }
        self.applied = Some(at.zxid);
        self.history.first.get_or_insert(at);
        self.history.last = Some(at);
        self.history.txns += 1;
        let session = e.header.client_id;
        let mut touched = BTreeSet::new();
        match &e.body {
            body if body.changed_nothing() => {}
            TxnBody::Multi(ops) => {
                for op in ops {
                    self.apply_op(at, session, op, &mut touched);
                }
            }
            TxnBody::CreateSession(c) => {
                self.history.session_timeouts.insert(session, c.timeout);
            }
            TxnBody::CloseSession(close) => {
                let cause = if e.header.cxid == 0 {
                    EndCause::Expired
                } else {
                    EndCause::Closed
                };
                let paths: Vec<String> = match close {
                    Some(c) => c.paths_to_delete.clone(),
                    None => self
                        .nodes
                        .iter()
                        .filter(|(_, m)| m.owner == session)
                        .map(|(p, _)| p.clone())
                        .collect(),
                };
                for path in paths {
                    self.remove(at, &path, cause, &mut touched);
                }
                self.ended.insert(session);
            }
            body => self.apply_op(at, session, body, &mut touched),
        }
        for dir in touched {
            self.judge(at, &dir);
        }
    }

    fn apply_op(&mut self, at: Stamp, session: i64, op: &TxnBody, touched: &mut BTreeSet<String>) {
        let parent_cversion = match op {
            TxnBody::Create(t) | TxnBody::Create2(t) => Some((&t.path, t.parent_cversion)),
            TxnBody::CreateTtl(t) => Some((&t.path, t.parent_cversion)),
            TxnBody::CreateContainer(t) => Some((&t.path, t.parent_cversion)),
            _ => None,
        };
        if let Some((path, cversion)) = parent_cversion {
            self.check_cversion(at, path, cversion);
        }
        let created = match op {
            TxnBody::Create(t) | TxnBody::Create2(t) => {
                Some((&t.path, if t.ephemeral { session } else { 0 }))
            }
            TxnBody::CreateV0(t) => Some((&t.path, if t.ephemeral { session } else { 0 })),
            TxnBody::CreateTtl(t) => Some((&t.path, 0)),
            TxnBody::CreateContainer(t) => Some((&t.path, CONTAINER_OWNER)),
            TxnBody::Delete(t) | TxnBody::DeleteContainer(t) => {
                let cause = match self.nodes.get(&t.path) {
                    Some(m) if m.owner != session => EndCause::DeletedBy(session),
                    _ => EndCause::OwnDelete,
                };
                self.remove(at, &t.path, cause, touched);
                None
            }
            _ => None,
        };
        if let Some((path, owner)) = created {
            if self
                .nodes
                .get(path.as_str())
                .is_some_and(|m| m.made.zxid == at.zxid)
            {
                return; // a fuzzy snapshot's node made again
            }
            if let Some(dir) = self.insert(path, at, owner) {
                let Some(lock) = self.locks.get_mut(&dir) else {
                    return;
                };
                let (_, name) = split(path).unwrap_or_default();
                if lock.entries.contains_key(name) {
                    let queue = lock.entries.len();
                    lock.record(Event {
                        at,
                        node: name.to_owned(),
                        session: owner,
                        kind: EventKind::Queued,
                        queue,
                    });
                }
                touched.insert(dir);
            }
        }
    }

    /// Notes that the servers lost transactions at `zxid` (members' logs disagree there).
    pub fn diverged(&mut self, zxid: i64) {
        self.history.anomalies.push(Anomaly::Diverged { zxid });
    }

    /// A create of `path` set its parent's children's version to `cversion`: it must be above
    /// any the record set before (the judge's check for forgotten history).
    fn check_cversion(&mut self, at: Stamp, path: &str, cversion: i32) {
        let Some((dir, _)) = split(path) else {
            return;
        };
        // Only directories that are locks, to keep the table small.
        if !self.locks.contains_key(dir) && !self.wanted(dir) {
            return;
        }
        match self.cversions.get_mut(dir) {
            Some(had) if cversion <= *had => {
                let had = *had;
                self.history.anomalies.push(Anomaly::Forgotten {
                    zxid: at.zxid,
                    dir: dir.to_owned(),
                    cversion,
                    had,
                });
                self.cversions.insert(dir.to_owned(), cversion);
            }
            Some(had) => *had = cversion,
            None => {
                self.cversions.insert(dir.to_owned(), cversion);
            }
        }
    }

    fn remove(&mut self, at: Stamp, path: &str, cause: EndCause, touched: &mut BTreeSet<String>) {
        self.cversions.remove(path);
        if self.nodes.remove(path).is_none() {
            self.history.anomalies.push(Anomaly::UnknownNode {
                zxid: at.zxid,
                path: path.to_owned(),
            });
            return;
        }
        self.children.remove(path);
        let Some((dir, name)) = split(path) else {
            return;
        };
        if let Some(kids) = self.children.get_mut(dir) {
            kids.remove(name);
        }
        // The lock's own directory went (an empty container removed).
        if let Some(lock) = self.locks.get_mut(path) {
            lock.empty_since = None;
        }
        let Some(lock) = self.locks.get_mut(dir) else {
            return;
        };
        touched.insert(dir.to_owned());
        let Some(entry) = lock.entries.remove(name) else {
            return;
        };
        let held = entry.granted.is_some();
        let for_ms = match entry.granted {
            Some(_) if entry.from_start => None,
            Some(g) => Some(at.time - g.time),
            None => Some(at.time - entry.made.time),
        };
        let queue = lock.entries.len();
        let index = lock.record(Event {
            at,
            node: name.to_owned(),
            session: entry.session,
            kind: EventKind::Ended {
                cause,
                held,
                for_ms,
                next_grant_ms: None,
            },
            queue,
        });
        if let (true, Some(i)) = (held, index) {
            lock.awaiting_grant.push(i);
        }
        // A semaphore's inner lock let go: the leases its session made while holding it,
        // still there, passed the count.
        if lock.kind == LockKind::SemaphoreInnerLock {
            if let Some((base, _)) = split(dir) {
                let leases = join(base, LEASES_DIR);
                if let Some(l) = self.locks.get_mut(&leases) {
                    let names: Vec<String> = l
                        .entries
                        .iter()
                        .filter(|(_, e)| e.granted.is_none() && e.inner.as_deref() == Some(path))
                        .map(|(n, _)| n.clone())
                        .collect();
                    for n in names {
                        grant(l, &n, at);
                    }
                }
            }
        }
    }

    /// Judges the lock at `dir` after a transaction that touched it.
    fn judge(&mut self, at: Stamp, dir: &str) {
        let kids: Vec<String> = self
            .children
            .get(dir)
            .map(|k| k.iter().cloned().collect())
            .unwrap_or_default();
        let is_container = self
            .nodes
            .get(dir)
            .is_some_and(|m| m.owner == CONTAINER_OWNER);
        let Some(lock) = self.locks.get_mut(dir) else {
            return;
        };
        lock.empty_since = match (kids.is_empty() && is_container, lock.empty_since) {
            (true, None) => Some(at),
            (true, since) => since,
            (false, _) => None,
        };
        for name in holders(lock.kind, kids) {
            if lock.entries.get(&name).is_some_and(|e| e.granted.is_none()) {
                grant(lock, &name, at);
            }
        }
        let held: Vec<String> = lock
            .entries
            .iter()
            .filter(|(_, e)| e.granted.is_some())
            .map(|(n, _)| n.clone())
            .collect();
        let too_many = match lock.kind {
            LockKind::Mutex | LockKind::SemaphoreInnerLock => held.len() > 1,
            LockKind::ReadWrite => {
                // A writer with anyone but its own downgrade's read node (same session, same
                // sequence).
                let writers: Vec<(&str, i64)> = held
                    .iter()
                    .filter(|n| sequence(n, WRITE_LOCK_NAME).is_some())
                    .filter_map(|n| Some((rw_sort_key(n), lock.entries.get(n)?.session)))
                    .collect();
                let others = held
                    .iter()
                    .filter(|n| sequence(n, WRITE_LOCK_NAME).is_none())
                    .filter(|n| {
                        let session = lock.entries.get(*n).map(|e| e.session);
                        !writers
                            .iter()
                            .any(|(k, s)| *k == rw_sort_key(n) && Some(*s) == session)
                    })
                    .count();
                !writers.is_empty() && (writers.len() > 1 || others > 0)
            }
            LockKind::Leases { max: Some(max) } => {
                held.len() > usize::try_from(max).unwrap_or(usize::MAX)
            }
            LockKind::Leases { max: None } => false,
        };
        if too_many && !lock.overlapping {
            self.history.anomalies.push(Anomaly::Overlap {
                zxid: at.zxid,
                dir: dir.to_owned(),
                holders: held,
            });
        }
        lock.overlapping = too_many;
    }

    /// The history so far.
    pub fn finish(mut self) -> History {
        self.history.events_stored = self.store;
        for (path, lock) in std::mem::take(&mut self.locks) {
            let live: Vec<LiveNode> = lock
                .entries
                .iter()
                .map(|(name, e)| LiveNode {
                    node: name.clone(),
                    session: e.session,
                    held: e.granted.is_some(),
                    orphan: e.session == 0 || self.ended.contains(&e.session),
                })
                .collect();
            let strays = self
                .children
                .get(&path)
                .into_iter()
                .flatten()
                .filter(|c| !lock.entries.contains_key(*c))
                .cloned()
                .collect();
            let summary = lock.tally.finish(&live);
            self.history.locks.push(LockHistory {
                path,
                kind: lock.kind,
                events: lock.events,
                live,
                empty_since: lock.empty_since,
                strays,
                summary,
            });
        }
        self.history
    }
}

fn grant(lock: &mut Lock, name: &str, at: Stamp) {
    let Some(entry) = lock.entries.get_mut(name) else {
        return;
    };
    entry.granted = Some(at);
    let (session, made) = (entry.session, entry.made);
    lock.tally.granted(at.time);
    for i in std::mem::take(&mut lock.awaiting_grant) {
        if let Some(Event {
            at: ended,
            kind: EventKind::Ended { next_grant_ms, .. },
            ..
        }) = lock.events.get_mut(i)
        {
            *next_grant_ms = Some(at.time - ended.time);
        }
    }
    let queue = lock.entries.len();
    lock.record(Event {
        at,
        node: name.to_owned(),
        session,
        kind: EventKind::Granted {
            wait_ms: at.time - made.time,
        },
        queue,
    });
}
