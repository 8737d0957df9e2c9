//! Curator's `InterProcessReadWriteLock`: the read and write predicates over one directory, and
//! the [`DowngradeMachine`] that gives a write holder its read lock (Curator 5.5's scheme).
//!
//! Both kinds of node live in the lock's directory and share its sequence counter:
//! `_c_<uuid>-__READ__<seq>` and `_c_<uuid>-__WRIT__<seq>`. Children are sorted by what follows
//! the last `__READ__`, then by what follows the last `__WRIT__` (so reads and writes interleave
//! by sequence number; other names keep their whole name).

use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::acquire::Held;
use crate::machine::{Cleanup, Failure, Input, Machine, Outcome};
use crate::name::{PROTECTED_PREFIX, java_cmp, sort_key};
use crate::op::{Connection, NodeMode, Op, Reply, ZkError};
use crate::predicate::{NodeMissing, Predicate, Verdict};
use crate::queue::Queue;
use crate::schedule::grace_end;

/// The read lock's node name.
pub const READ_LOCK_NAME: &str = "__READ__";

/// The write lock's node name.
pub const WRITE_LOCK_NAME: &str = "__WRIT__";

/// The read/write lock's sort key: what follows the last `__READ__`, then what follows the last
/// `__WRIT__` in that (Curator's `InterProcessReadWriteLock.sortChildren`).
///
/// # Examples
///
/// ```
/// use recipes_core::rwlock::rw_sort_key;
///
/// assert_eq!(rw_sort_key("_c_3f0c6a52-8f7e-4b1e-9a53-2d6f0e1c9b7a-__READ__0000000004"), "0000000004");
/// assert_eq!(rw_sort_key("_c_3f0c6a52-8f7e-4b1e-9a53-2d6f0e1c9b7a-__WRIT__0000000003"), "0000000003");
/// assert_eq!(rw_sort_key("foreign"), "foreign");
/// ```
pub fn rw_sort_key(name: &str) -> &str {
    sort_key(sort_key(name, READ_LOCK_NAME), WRITE_LOCK_NAME)
}

/// Sorts children as the read/write lock does: stable, by [`rw_sort_key`], as Java strings.
pub fn rw_sort(children: &mut [String]) {
    children.sort_by(|a, b| java_cmp(rw_sort_key(a), rw_sort_key(b)));
}

/// The write lock's predicate: the standard one (hold when first among *all* children, readers
/// included; watch the node just before ours, reader or writer), with the read/write sort.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WritePredicate;

impl Predicate for WritePredicate {
    fn lock_name(&self) -> &str {
        WRITE_LOCK_NAME
    }

    fn sort(&self, children: &mut [String]) {
        rw_sort(children);
    }

    fn verdict(&self, sorted: &[String], ours: &str) -> Result<Verdict, NodeMissing> {
        let index = sorted.iter().position(|c| c == ours).ok_or(NodeMissing)?;
        match index.checked_sub(1) {
            None => Ok(Verdict::Hold),
            Some(before) => sorted
                .get(before)
                .cloned()
                .map(Verdict::Watch)
                .ok_or(NodeMissing),
        }
    }
}

/// The read lock's predicate: hold when no write node sorts before ours (other names are
/// ignored); otherwise watch the **first** write node, as every reader behind it does.
///
/// Curator also holds at once when the asking thread owns the write lock (a downgrade); here
/// that case never reaches the predicate: the hold layer runs a [`DowngradeMachine`] instead.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadPredicate;

impl Predicate for ReadPredicate {
    fn lock_name(&self) -> &str {
        READ_LOCK_NAME
    }

    fn sort(&self, children: &mut [String]) {
        rw_sort(children);
    }

    fn verdict(&self, sorted: &[String], ours: &str) -> Result<Verdict, NodeMissing> {
        let index = sorted.iter().position(|c| c == ours).ok_or(NodeMissing)?;
        let first_write = sorted
            .iter()
            .take(index)
            .find(|c| c.contains(WRITE_LOCK_NAME));
        match first_write {
            None => Ok(Verdict::Hold),
            Some(w) => Ok(Verdict::Watch(w.clone())),
        }
    }
}

/// The name of a downgrade's read node: `_c_<uuid>-__READ__<the write node's 10 digits>`, so it
/// sorts level with the write node (Curator 5.5, CURATOR-621). `None` if `write_node` (a name,
/// not a path) has no sequence after `__WRIT__`.
///
/// # Examples
///
/// ```
/// use recipes_core::rwlock::downgrade_name;
///
/// let w = "_c_00000000-0000-4000-8000-000000000001-__WRIT__0000000007";
/// assert_eq!(
///     downgrade_name("3f0c6a52-8f7e-4b1e-9a53-2d6f0e1c9b7a", w).as_deref(),
///     Some("_c_3f0c6a52-8f7e-4b1e-9a53-2d6f0e1c9b7a-__READ__0000000007")
/// );
/// ```
pub fn downgrade_name(uuid: &str, write_node: &str) -> Option<String> {
    let seq = write_node.rsplit(WRITE_LOCK_NAME).next()?;
    (write_node.contains(WRITE_LOCK_NAME) && !seq.is_empty())
        .then(|| format!("{PROTECTED_PREFIX}{uuid}-{READ_LOCK_NAME}{seq}"))
}

/// How long to wait before trying again after a transient failure.
const RETRY_DELAY: Duration = Duration::from_millis(50);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    Create,
    Sync,
    Children,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    Create,
    /// A create's reply was lost: sync, then look for our exact node.
    Check,
}

/// A write holder takes its read lock (a downgrade), Curator 5.5's way: create the read node
/// `EPHEMERAL` (not sequential) under [`downgrade_name`], so that it sorts level with the write
/// node and a writer queued behind stays blocked after the write lock is released. Holding the
/// write lock is what lets this task read.
///
/// Beyond Curator, the create travels with a listing (answered in order, in the same round
/// trip), and the read lock is held only if that listing shows both our read node and our
/// write node: if someone deleted our write node, another writer may hold, and the downgrade
/// fails ([`Failure::NodeVanished`]) and deletes its read node instead of reading beside that
/// writer.
///
/// A lost create reply is recovered by the exact name: after a `sync`, the listing shows our
/// node (ours: nobody else uses our protection id) or it is created again; `NodeExists` on our
/// own name is ours too. The deadline ends the attempt only while waiting for the connection.
/// The read hold carries the write hold's fencing token (`write_czxid`): it continues the write
/// hold, and the next writer's token is greater.
#[derive(Debug, Clone)]
pub struct DowngradeMachine {
    base: String,
    path: String,
    name: String,
    write_name: String,
    write_czxid: i64,
    data: Bytes,
    deadline: Option<Instant>,
    connection: Connection,
    sent: Queue<Sent, 4>,
    outbox: Queue<Op, 4>,
    /// What to do once the flight in the air has landed.
    planned: Option<Next>,
    /// Waiting (for the connection or `retry_at`) to do this.
    next: Option<Next>,
    retry_at: Option<Instant>,
    /// A create of ours may have been applied.
    maybe_created: bool,
    /// The flight's listing.
    listing: Option<Vec<String>>,
    outcome: Option<Outcome<Held>>,
}

impl DowngradeMachine {
    /// A downgrade under lock directory `base`, for the write node `write_node` (a name) whose
    /// creation zxid is `write_czxid`, with protection id `uuid`. `None` if `write_node` is not
    /// a write node.
    pub fn new(
        base: &str,
        write_node: &str,
        write_czxid: i64,
        uuid: &str,
        data: Bytes,
        deadline: Option<Instant>,
    ) -> Option<Self> {
        let name = downgrade_name(uuid, write_node)?;
        Some(Self {
            base: base.to_owned(),
            path: crate::acquire::child_path(base, &name),
            name,
            write_name: write_node.to_owned(),
            write_czxid,
            data,
            deadline,
            connection: Connection::Connected,
            sent: Queue::new(),
            outbox: Queue::new(),
            planned: None,
            next: None,
            retry_at: None,
            maybe_created: false,
            listing: None,
            outcome: None,
        })
    }

    /// The read node's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    fn send(&mut self, kind: Sent, op: Op) {
        self.sent.push_back(kind);
        self.outbox.push_back(op);
    }

    fn go(&mut self, now: Instant, next: Next) {
        self.next = None;
        self.planned = None;
        self.retry_at = None;
        self.listing = None;
        if self.connection != Connection::Connected {
            self.wait(now, next);
            return;
        }
        match next {
            Next::Create => {
                self.maybe_created = true;
                let op = Op::Create {
                    path: self.path.clone(),
                    mode: NodeMode::Ephemeral,
                    data: self.data.clone(),
                };
                self.send(Sent::Create, op);
            }
            Next::Check => {
                let sync = Op::Sync {
                    path: self.base.clone(),
                };
                self.send(Sent::Sync, sync);
            }
        }
        let list = Op::Children {
            path: self.base.clone(),
            watch: false,
        };
        self.send(Sent::Children, list);
    }

    /// Waits for the connection (or a short delay if it looks up) to do `next`.
    fn wait(&mut self, now: Instant, next: Next) {
        if self.deadline.is_some_and(|d| now >= d) {
            self.finish(Outcome::TimedOut);
            return;
        }
        self.next = Some(next);
        if self.connection == Connection::Connected {
            self.retry_at = Some(now + RETRY_DELAY);
        }
    }

    fn finish(&mut self, outcome: Outcome<Held>) {
        self.next = None;
        self.planned = None;
        self.retry_at = None;
        if self.outcome.is_none() {
            self.outcome = Some(outcome);
        }
    }

    fn plan(&mut self, next: Next) {
        // Checking beats creating: a create may have been applied.
        if self.planned != Some(Next::Check) {
            self.planned = Some(next);
        }
    }

    fn on_reply(&mut self, now: Instant, reply: Reply) {
        let Some(kind) = self.sent.pop_front() else {
            return;
        };
        if kind == Sent::Create {
            match &reply {
                Reply::Failed(e) if !e.is_uncertain() && *e != ZkError::Transient => {
                    // A definite answer: it exists (ours, from before) or it was not made.
                    self.maybe_created = *e == ZkError::NodeExists;
                }
                _ => {}
            }
        }
        if let (Sent::Children, Reply::Children(kids)) = (kind, &reply) {
            self.maybe_created = kids.contains(&self.name);
        }
        if self.outcome.is_some() {
            return;
        }
        match (kind, reply) {
            // The listing decides (our node exists: made now, or by an earlier create).
            (Sent::Create, Reply::Created { .. } | Reply::Failed(ZkError::NodeExists)) => {}
            (Sent::Create, Reply::Failed(ZkError::NoNode)) => self.vanished(),
            (Sent::Create, Reply::Failed(ZkError::NotSent)) => {
                let next = if self.maybe_created {
                    Next::Check
                } else {
                    Next::Create
                };
                self.plan(next);
            }
            (Sent::Sync, _) => {} // the listing that follows decides
            (Sent::Children, Reply::Children(kids)) => self.listing = Some(kids),
            (Sent::Children, Reply::Failed(ZkError::NoNode)) => self.vanished(),
            (_, Reply::Failed(e)) => match e {
                ZkError::ConnectionLoss | ZkError::Transient | ZkError::NotSent => {
                    self.plan(Next::Check)
                }
                ZkError::SessionExpired => {
                    self.maybe_created = false;
                    self.finish(Outcome::Failed(Failure::SessionExpired));
                }
                e => self.finish(Outcome::Failed(Failure::Zk(e))),
            },
            (_, _) => self.finish(Outcome::Failed(Failure::Zk(ZkError::Other))),
        }
        if self.outcome.is_none() && self.sent.is_empty() {
            self.settle(now);
        }
    }

    /// The flight has landed: decide.
    fn settle(&mut self, now: Instant) {
        if let Some(next) = self.planned.take() {
            // Once connected (or, if the session has not reported a loss yet, after a delay).
            self.wait(now, next);
            return;
        }
        let Some(listing) = self.listing.take() else {
            self.wait(now, Next::Check);
            return;
        };
        if !listing.contains(&self.write_name) {
            // Someone deleted our write node: another writer may hold. Do not read.
            self.vanished();
        } else if listing.contains(&self.name) {
            let path = self.path.clone();
            let czxid = self.write_czxid;
            self.finish(Outcome::Held(Held { path, czxid }));
        } else {
            self.go(now, Next::Create);
        }
    }

    fn vanished(&mut self) {
        self.finish(Outcome::Failed(Failure::NodeVanished));
    }
}

impl Machine for DowngradeMachine {
    type Output = Held;

    fn handle(&mut self, now: Instant, input: Input) {
        let is_timeout = input == Input::Timeout;
        match input {
            Input::Start if self.sent.is_empty() && self.next.is_none() => {
                self.go(now, Next::Create);
            }
            Input::Start | Input::Watch { .. } | Input::Wake => {}
            Input::Reply(reply) => self.on_reply(now, reply),
            Input::Connection(c) => {
                self.connection = c;
                match c {
                    Connection::Expired => {
                        self.maybe_created = false;
                        self.finish(Outcome::Failed(Failure::SessionExpired));
                    }
                    Connection::Connected => {
                        if let Some(next) = self.next.filter(|_| self.sent.is_empty()) {
                            self.go(now, next);
                        }
                    }
                    // Lost is not the end: see the fair lock's attempt.
                    Connection::Lost | Connection::Disconnected | Connection::ReadOnly => {
                        self.retry_at = None
                    }
                }
            }
            Input::Timeout => {
                if self.outcome.is_some() {
                    return;
                }
                if let Some(next) = self.next.filter(|_| self.sent.is_empty()) {
                    if self.retry_at.is_some_and(|t| now >= t) {
                        self.go(now, next);
                    } else if self.deadline.is_some_and(|d| now >= d) {
                        self.finish(Outcome::TimedOut);
                    }
                } else if !self.sent.is_empty()
                    && self.deadline.is_some_and(|d| now >= grace_end(d))
                {
                    // Replies that do not come (a stalled connection): the attempt ends within
                    // its deadline and one grace, its cleanups owed.
                    self.finish(Outcome::TimedOut);
                }
            }
            Input::Abandon => self.finish(Outcome::Failed(Failure::Abandoned)),
        }
        // A deadline that passed during another input is acted on now: no timer in the past.
        if !is_timeout && self.poll_timeout().is_some_and(|t| t <= now) {
            self.handle(now, Input::Timeout);
        }
    }

    fn poll_op(&mut self) -> Option<Op> {
        self.outbox.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.outcome.is_some() {
            return None;
        }
        if self.next.is_none() {
            // Replies in flight: they may come within a grace past the deadline.
            return match self.sent.is_empty() {
                true => None,
                false => self.deadline.map(grace_end),
            };
        }
        [self.retry_at, self.deadline].into_iter().flatten().min()
    }

    fn outcome(&self) -> Option<&Outcome<Held>> {
        self.outcome.as_ref()
    }

    fn cleanups(&self) -> Vec<Cleanup> {
        let held = matches!(self.outcome, Some(Outcome::Held(_)));
        let in_flight_create = self.sent.iter().any(|s| *s == Sent::Create);
        let nothing_made = !self.maybe_created && !in_flight_create;
        if held || nothing_made {
            return Vec::new();
        }
        vec![Cleanup::Delete(self.path.clone())]
    }
}
