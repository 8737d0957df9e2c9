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

mod apply;
mod ends;
mod history;
mod judge;
mod lock;
mod rules;
mod summary;
mod tree;

pub use history::{
    Anomaly, EndCause, Event, EventKind, History, LiveNode, LockHistory, LockKind, Stamp,
};
pub use summary::{Range, Summary, Tally};

use lock::{Lock, Meta};

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
