//! [`SemaphoreMachine`]: one attempt to take `qty` leases of Curator's
//! `InterProcessSemaphoreV2` (and so of `InterProcessSemaphoreMutex`, which is one lease of
//! one), as a [`Machine`].
//!
//! The layout is Curator's, to the byte: under the semaphore's path, `locks/` holds an
//! `InterProcessMutex` that serialises whoever is adding leases, and `leases/` one
//! `EPHEMERAL_SEQUENTIAL` node `_c_<uuid>-lease-<seq>` per lease. Holding the inner lock, a
//! client creates its lease, lists `leases/` and holds when the number of children is at most
//! the maximum (a count, not a position: any child counts, foreign ones too); otherwise it
//! watches `leases/` and counts again when it changes. Only then does it release the inner lock.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use bytes::Bytes;

use crate::acquire::{AcquireMachine, Held, child_path};
use crate::machine::{Cleanup, Failure, Input, Machine, Outcome};
use crate::name::{node_prefix, protection_prefix};
use crate::op::{Connection, NodeMode, Op, Reply, WatchEvent, WatchKind, ZkError};
use crate::predicate::Exclusive;
use crate::queue::Queue;
use crate::schedule::{Resume, Schedule, Step, When};

/// The child of a semaphore's path that holds its inner lock.
pub const LOCKS_DIR: &str = "locks";

/// The child of a semaphore's path that holds its leases.
pub const LEASES_DIR: &str = "leases";

/// The lock name of a lease node (`_c_<uuid>-lease-<seq>`).
pub const LEASE_NAME: &str = "lease-";

/// The maximum number of leases, shared between a semaphore and its attempts: fixed, or
/// followed from a shared count node by whoever owns it (who then wakes the waiting attempts
/// with [`Input::Wake`]).
#[derive(Debug, Clone)]
pub struct MaxLeases(Arc<AtomicU32>);

impl MaxLeases {
    /// A maximum of `n` leases.
    pub fn new(n: u32) -> Self {
        Self(Arc::new(AtomicU32::new(n)))
    }

    /// The maximum now.
    pub fn get(&self) -> u32 {
        self.0.load(Ordering::Acquire)
    }

    /// Changes the maximum (for every holder of this handle).
    pub fn set(&self, n: u32) {
        self.0.store(n, Ordering::Release);
    }
}

/// What a sent op was for, to route its reply.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Route {
    /// The inner lock's machine sent it.
    Inner,
    /// The lease stage sent it.
    Lease(Sent),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Sent {
    Create,
    /// A listing of `leases/`, with a children watch or not.
    Children(bool),
    Exists(String),
    Sync,
    CreateParents,
    DeleteExtra,
    /// A data watch on our inner lock node, while waiting.
    WatchInner,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Before `Start`.
    Idle,
    /// Taking the inner lock.
    Inner,
    /// Lease ops in flight; their replies decide what comes next.
    Busy,
    /// More children than leases: waiting for the children watch on `leases/`.
    Waiting,
    /// Waiting for the connection (or the retry timer).
    Paused,
    /// Finished; see `outcome`.
    Done,
}

/// A lease node of ours: its name, and its creation zxid once known.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Lease {
    name: String,
    czxid: Option<i64>,
}

/// One attempt to take `qty` leases of the semaphore at `base`, Curator's way, in fewer round
/// trips: the inner lock's create and listing travel together ([`AcquireMachine`]); holding
/// it, the `qty` lease creates and the listing of `leases/` travel together; the inner lock's
/// delete is not awaited ([`Machine::releases`]). So an uncontended acquisition awaits two
/// round trips where Curator awaits five, and the other clients see the same writes in the
/// same order.
///
/// - The `qty` leases are taken under one hold of the inner lock, so two of these attempts
///   cannot deadlock each holding part of what they need (Curator takes them one inner-lock
///   cycle at a time).
/// - The first listing leaves no watch: an uncontended acquisition costs no notification.
///   When there are too many children, it lists again with a children watch and waits.
/// - No lease is created before the inner lock is held, and the inner lock is released only
///   after a count that holds (or with the attempt's end): anything else can deadlock against
///   Curator's clients.
/// - After a lost create reply it `sync`s and finds its leases by the protection prefix
///   (shared by the inner lock node and the leases of one attempt); extra nodes of ours are
///   deleted. A lease of ours that vanishes ends the attempt with [`Failure::NodeVanished`],
///   and so does our inner lock node vanishing while we wait (deleted by hand: another client
///   may then add a lease beside ours, and both would wait for ever; we give ours back and
///   queue again).
/// - Past its deadline it ends as [`AcquireMachine`] does; its cleanups then delete the
///   leases taken and the inner lock node.
///
/// # Examples
///
/// ```
/// use std::time::Instant;
/// use recipes_core::semaphore::{MaxLeases, SemaphoreMachine};
/// use recipes_core::{Cleanup, Input, Machine, Op, Outcome, Reply};
///
/// let now = Instant::now();
/// let uuid = "3f0c6a52-8f7e-4b1e-9a53-2d6f0e1c9b7a";
/// let mut m = SemaphoreMachine::new("/sem", 1, MaxLeases::new(2), uuid, Default::default(), None);
/// m.handle(now, Input::Start);
/// // The inner lock: create and list in one flight.
/// assert!(matches!(m.poll_op(), Some(Op::Create { .. })));
/// assert!(matches!(m.poll_op(), Some(Op::Children { .. })));
/// let inner = format!("_c_{uuid}-lock-0000000000");
/// m.handle(now, Input::Reply(Reply::Created { path: format!("/sem/locks/{inner}"), czxid: 5 }));
/// m.handle(now, Input::Reply(Reply::Children(vec![inner.clone()])));
/// // Held: the lease and the count in one flight.
/// assert!(matches!(m.poll_op(), Some(Op::Create { .. })));
/// assert_eq!(m.poll_op(), Some(Op::Children { path: "/sem/leases".into(), watch: false }));
/// let lease = format!("_c_{uuid}-lease-0000000003");
/// m.handle(now, Input::Reply(Reply::Created { path: format!("/sem/leases/{lease}"), czxid: 6 }));
/// m.handle(now, Input::Reply(Reply::Children(vec!["other".into(), lease])));
/// assert!(matches!(m.outcome(), Some(Outcome::Held(leases)) if leases.len() == 1));
/// // The inner lock goes once held, without waiting.
/// assert_eq!(m.releases(), vec![Cleanup::Delete(format!("/sem/locks/{inner}"))]);
/// ```
#[derive(Debug, Clone)]
pub struct SemaphoreMachine {
    leases_dir: String,
    prefix: String,
    lease_prefix: String,
    data: Bytes,
    qty: u32,
    max: MaxLeases,
    inner: AcquireMachine<Exclusive>,
    /// The inner lock, once held.
    inner_held: Option<Held>,
    stage: Stage,
    routes: Queue<Route, 4>,
    outbox: Queue<Op, 4>,
    /// Lease-stage ops in flight.
    lease_ops: usize,
    /// The lease stage's plan, the deadline and its grace, the retry timer.
    schedule: Schedule,
    connection: Connection,
    ours: Vec<Lease>,
    creates_in_flight: u32,
    lost_create: bool,
    /// A children watch on `leases/` is set and has not fired.
    watching: bool,
    /// A data watch on our inner lock node is set (or asked for) and has not fired.
    inner_watched: bool,
    outcome: Option<Outcome<Vec<Held>>>,
}

impl SemaphoreMachine {
    /// An attempt on the semaphore at `base` (validated by the caller) for `qty` leases (at
    /// least one), with protection id `uuid` (fresh per attempt), lease data `data`, and an
    /// optional deadline.
    pub fn new(
        base: &str,
        qty: u32,
        max: MaxLeases,
        uuid: &str,
        data: Bytes,
        deadline: Option<Instant>,
    ) -> Self {
        let locks = child_path(base, LOCKS_DIR);
        let inner = AcquireMachine::new(&locks, Exclusive::mutex(), uuid, Bytes::new(), deadline);
        Self {
            leases_dir: child_path(base, LEASES_DIR),
            prefix: protection_prefix(uuid),
            lease_prefix: node_prefix(uuid, LEASE_NAME),
            data,
            qty: qty.max(1),
            max,
            inner,
            inner_held: None,
            stage: Stage::Idle,
            routes: Queue::new(),
            outbox: Queue::new(),
            lease_ops: 0,
            schedule: Schedule::new(deadline),
            connection: Connection::Connected,
            ours: Vec::new(),
            creates_in_flight: 0,
            lost_create: false,
            watching: false,
            inner_watched: false,
            outcome: None,
        }
    }

    fn lease_path(&self, name: &str) -> String {
        child_path(&self.leases_dir, name)
    }

    fn send(&mut self, sent: Sent, op: Op) {
        self.lease_ops += 1;
        self.routes.push_back(Route::Lease(sent));
        self.outbox.push_back(op);
    }

    /// Moves the inner machine's ops out, and follows its outcome.
    fn pump_inner(&mut self, now: Instant) {
        while let Some(op) = self.inner.poll_op() {
            self.routes.push_back(Route::Inner);
            self.outbox.push_back(op);
        }
        if self.stage != Stage::Inner {
            return;
        }
        match self.inner.outcome().cloned() {
            None => {}
            Some(Outcome::Held(held)) => {
                self.inner_held = Some(held);
                if self.deadline_passed(now) {
                    self.schedule.start_grace(now);
                }
                self.create_and_list();
            }
            Some(Outcome::TimedOut) => self.finish(Outcome::TimedOut),
            Some(Outcome::Failed(f)) => self.finish(Outcome::Failed(f)),
        }
    }

    fn create_and_list(&mut self) {
        self.stage = Stage::Busy;
        let have = self.ours.len() as u32 + self.creates_in_flight;
        for _ in have..self.qty {
            self.creates_in_flight += 1;
            let op = Op::Create {
                path: child_path(&self.leases_dir, &self.lease_prefix),
                mode: NodeMode::EphemeralSequential,
                data: self.data.clone(),
            };
            self.send(Sent::Create, op);
        }
        self.list(false);
    }

    fn list(&mut self, watch: bool) {
        self.stage = Stage::Busy;
        let op = Op::Children {
            path: self.leases_dir.clone(),
            watch,
        };
        self.send(Sent::Children(watch), op);
    }

    fn run(&mut self, resume: Resume) {
        self.schedule.clear();
        match resume {
            Resume::List => self.list(false),
            Resume::CreateAndList => self.create_and_list(),
            Resume::MakeParents => {
                self.stage = Stage::Busy;
                let op = Op::CreateParents {
                    path: self.leases_dir.clone(),
                };
                self.send(Sent::CreateParents, op);
            }
            Resume::Recover => {
                self.stage = Stage::Busy;
                let op = Op::Sync {
                    path: self.leases_dir.clone(),
                };
                self.send(Sent::Sync, op);
                self.list(false);
            }
        }
    }

    fn plan(&mut self, resume: Resume, when: When) {
        self.schedule.plan(resume, when);
    }

    /// Carries out the plan, now that no lease op is in flight.
    fn settle(&mut self, now: Instant) {
        let connected = self.connection == Connection::Connected;
        if let Some(step) = self.schedule.settle(now, connected) {
            self.step(step);
        }
    }

    fn step(&mut self, step: Step) {
        match step {
            Step::Run(resume) => self.run(resume),
            Step::Pause => self.stage = Stage::Paused,
            Step::TimedOut => self.finish(Outcome::TimedOut),
        }
    }

    fn finish(&mut self, outcome: Outcome<Vec<Held>>) {
        self.stage = Stage::Done;
        self.schedule.clear();
        if self.outcome.is_none() {
            self.outcome = Some(outcome);
        }
    }

    fn fail(&mut self, e: ZkError) {
        let failure = match e {
            ZkError::SessionExpired => {
                self.forget_everything();
                Failure::SessionExpired
            }
            e => Failure::Zk(e),
        };
        self.finish(Outcome::Failed(failure));
    }

    /// The session is gone, and our ephemeral nodes with it.
    fn forget_everything(&mut self) {
        self.ours.clear();
        self.inner_held = None;
        self.lost_create = false;
        self.creates_in_flight = 0;
    }

    fn deadline_passed(&self, now: Instant) -> bool {
        self.schedule.deadline_passed(now)
    }

    /// A failed lease-stage op: wait for the connection, retry later, or give up.
    fn retry_or_fail(&mut self, e: ZkError, resume: Resume) {
        if let Err(e) = self.schedule.retry_or_fail(e, resume) {
            self.fail(e);
        }
    }

    fn on_reply(&mut self, now: Instant, reply: Reply) {
        let Some(route) = self.routes.pop_front() else {
            return;
        };
        let sent = match route {
            Route::Inner => {
                self.inner.handle(now, Input::Reply(reply));
                self.pump_inner(now);
                return;
            }
            Route::Lease(sent) => sent,
        };
        self.lease_ops = self.lease_ops.saturating_sub(1);
        // Bookkeeping first: it decides the cleanups, also once the attempt is over.
        match (&sent, &reply) {
            (Sent::Create, Reply::Created { path, czxid }) => {
                self.creates_in_flight = self.creates_in_flight.saturating_sub(1);
                if let Some(name) = path.rsplit('/').next() {
                    self.ours.push(Lease {
                        name: name.to_owned(),
                        czxid: Some(*czxid),
                    });
                }
            }
            (Sent::Create, Reply::Failed(e)) => {
                self.creates_in_flight = self.creates_in_flight.saturating_sub(1);
                if e.is_uncertain() || *e == ZkError::Transient {
                    self.lost_create = true;
                }
            }
            (Sent::Create, _) => {
                self.creates_in_flight = self.creates_in_flight.saturating_sub(1);
            }
            (Sent::Exists(name), Reply::Exists(Some(czxid))) => {
                if let Some(lease) = self.ours.iter_mut().find(|l| l.name == *name) {
                    lease.czxid = Some(*czxid);
                }
            }
            (Sent::Children(true), Reply::Children(_)) => self.watching = true,
            _ => {}
        }
        if self.stage == Stage::Done {
            return;
        }
        match (sent, reply) {
            (Sent::Create, Reply::Created { .. }) => {} // the listing follows
            // `leases/` is missing. If a lease of ours was created in it, the directory went
            // (a container, removed once our lease was deleted by hand) and our lease with it:
            // start over rather than count a new node of the same name twice (seed 362809).
            (Sent::Create, Reply::Failed(ZkError::NoNode)) if !self.ours.is_empty() => {
                self.vanished();
            }
            (Sent::Create, Reply::Failed(ZkError::NoNode)) => {
                self.plan(Resume::MakeParents, When::Now);
            }
            (Sent::Create, Reply::Failed(ZkError::NotSent)) => {
                self.plan(Resume::CreateAndList, When::Connected);
            }
            (Sent::Create, Reply::Failed(ZkError::Transient)) => {
                self.plan(Resume::Recover, When::Later);
            }
            (Sent::Create, Reply::Failed(ZkError::ConnectionLoss)) => {
                self.plan(Resume::Recover, When::Connected);
            }
            (Sent::Create, Reply::Failed(e)) => self.fail(e),
            (Sent::Create, _) => self.fail(ZkError::Other),

            (Sent::CreateParents, Reply::Done) => self.plan(Resume::CreateAndList, When::Now),
            (Sent::CreateParents, Reply::Failed(ZkError::NoNode)) => {
                self.finish(Outcome::Failed(Failure::ParentMissing));
            }
            (Sent::CreateParents, Reply::Failed(e)) => self.retry_or_fail(e, Resume::MakeParents),
            (Sent::CreateParents, _) => self.fail(ZkError::Other),

            (Sent::Sync | Sent::Exists(_) | Sent::DeleteExtra, _) => {}
            // Our inner lock node went while we waited: see `on_children`.
            (Sent::WatchInner, Reply::Failed(ZkError::NoNode)) => self.vanished(),
            (Sent::WatchInner, Reply::Data { .. }) => {}
            (Sent::WatchInner, Reply::Failed(_)) => self.inner_watched = false,
            (Sent::WatchInner, _) => self.fail(ZkError::Other),

            (Sent::Children(_), _) if self.schedule.is_planned() => {}
            (Sent::Children(_), Reply::Children(children)) => self.on_children(now, children),
            (Sent::Children(_), Reply::Failed(ZkError::NoNode)) => {
                if self.ours.is_empty() {
                    // `leases/` is gone (a container removed): nothing of ours was there.
                    self.lost_create = false;
                    self.plan(Resume::MakeParents, When::Now);
                } else {
                    self.vanished();
                }
            }
            (Sent::Children(_), Reply::Failed(e)) => {
                let resume = if self.lost_create {
                    Resume::Recover
                } else {
                    Resume::List
                };
                self.retry_or_fail(e, resume);
            }
            (Sent::Children(_), _) => self.fail(ZkError::Other),
        }
        if self.stage != Stage::Done && self.lease_ops == 0 {
            self.settle(now);
        }
    }

    fn vanished(&mut self) {
        self.finish(Outcome::Failed(Failure::NodeVanished));
    }

    fn on_children(&mut self, now: Instant, children: Vec<String>) {
        let mine: Vec<&String> = children
            .iter()
            .filter(|c| c.starts_with(&self.prefix))
            .collect();
        if self.lost_create {
            // After a lost create reply and a sync: adopt what was applied.
            self.lost_create = false;
            for name in &mine {
                if !self.ours.iter().any(|l| l.name == **name) {
                    self.ours.push(Lease {
                        name: (*name).clone(),
                        czxid: None,
                    });
                }
            }
        }
        // A lease of ours that is not listed was deleted under us; two of the same name mean
        // the first was deleted and the directory made again.
        let twice = self
            .ours
            .iter()
            .enumerate()
            .any(|(i, l)| self.ours.iter().skip(i + 1).any(|m| m.name == l.name));
        if twice || self.ours.iter().any(|l| !children.contains(&l.name)) {
            self.vanished();
            return;
        }
        // Nodes of ours beyond `qty` (a create applied twice): delete them; they do not count.
        let qty = self.qty as usize;
        if self.ours.len() > qty {
            self.ours.truncate(qty);
        }
        let extra: Vec<String> = mine
            .iter()
            .filter(|n| !self.ours.iter().any(|l| l.name == ***n))
            .map(|n| (*n).clone())
            .collect();
        let count = children.len().saturating_sub(extra.len());
        for name in extra {
            let op = Op::Delete {
                path: self.lease_path(&name),
            };
            self.send(Sent::DeleteExtra, op);
        }
        if self.ours.len() + (self.creates_in_flight as usize) < qty {
            self.plan(Resume::CreateAndList, When::Now);
            return;
        }
        let unknown: Vec<String> = self
            .ours
            .iter()
            .filter(|l| l.czxid.is_none())
            .map(|l| l.name.clone())
            .collect();
        if !unknown.is_empty() {
            // Adopted leases: their creation zxids, then one more count (pipelined).
            for name in unknown {
                let op = Op::Exists {
                    path: self.lease_path(&name),
                    watch: false,
                };
                self.send(Sent::Exists(name), op);
            }
            self.list(false);
            return;
        }
        if count <= self.max.get() as usize {
            self.hold();
        } else if self.schedule.timed_out() || self.deadline_passed(now) {
            self.finish(Outcome::TimedOut);
        } else {
            if crate::plant::lease_wait_shortcut() {
                // The planted defect: let the inner lock go while waiting.
                if let Some(inner) = self.inner_held.take() {
                    self.send(Sent::DeleteExtra, Op::Delete { path: inner.path });
                }
            }
            // Waiting, we keep the inner lock; if its node goes (deleted by hand), another
            // client may add a lease beside ours and both would wait for ever: watch it, and
            // start over if it goes.
            let watch_inner = !self.inner_watched;
            if self.watching {
                self.stage = Stage::Waiting;
            } else {
                self.list(true);
            }
            if watch_inner {
                self.watch_inner();
            }
        }
    }

    /// Holds our leases.
    fn hold(&mut self) {
        let held = self
            .ours
            .iter()
            .filter_map(|l| {
                l.czxid.map(|czxid| Held {
                    path: self.lease_path(&l.name),
                    czxid,
                })
            })
            .collect();
        self.finish(Outcome::Held(held));
    }

    /// Watches our inner lock node while we wait holding it.
    fn watch_inner(&mut self) {
        if let Some(inner) = &self.inner_held {
            let op = Op::GetData {
                path: inner.path.clone(),
                watch: true,
            };
            self.inner_watched = true;
            self.send(Sent::WatchInner, op);
        }
    }

    fn on_watch(&mut self, now: Instant, kind: WatchKind, path: String, event: WatchEvent) {
        if kind == WatchKind::Children && path == self.leases_dir {
            self.watching = false;
            if self.stage == Stage::Waiting && event != WatchEvent::SessionEnded {
                if crate::plant::lease_wait_shortcut() {
                    // The planted defect: take the lease on the change, uncounted.
                    self.hold();
                    return;
                }
                self.list(true);
            }
            return;
        }
        if kind == WatchKind::Data && self.inner_held.as_ref().is_some_and(|h| h.path == path) {
            self.inner_watched = false;
            let live = !matches!(self.stage, Stage::Done | Stage::Inner);
            if live && event == WatchEvent::Deleted {
                self.vanished();
            }
            return;
        }
        self.inner.handle(now, Input::Watch { kind, path, event });
        self.pump_inner(now);
    }

    fn on_connection(&mut self, now: Instant, connection: Connection) {
        self.connection = connection;
        self.inner.handle(now, Input::Connection(connection));
        if self.stage == Stage::Inner {
            self.pump_inner(now);
            return;
        }
        if self.stage == Stage::Done {
            if connection == Connection::Expired {
                self.forget_everything();
            }
            return;
        }
        match connection {
            Connection::Expired => {
                self.forget_everything();
                self.finish(Outcome::Failed(Failure::SessionExpired));
            }
            // Not the end: see the fair lock's attempt.
            Connection::Lost | Connection::Disconnected | Connection::ReadOnly => {
                if let Some(step) = self.schedule.on_disconnect(now) {
                    self.step(step);
                }
            }
            Connection::Connected => {
                // The watch on our inner node was lost with the connection: set it again, or
                // a deletion of that node while we wait would go unseen (seed 241566).
                if self.stage == Stage::Waiting && !self.inner_watched {
                    self.watch_inner();
                }
                if self.stage == Stage::Paused && self.lease_ops == 0 {
                    if let Some(step) = self.schedule.on_reconnect(now) {
                        self.step(step);
                    }
                }
            }
        }
    }

    fn on_timeout(&mut self, now: Instant) {
        match self.stage {
            Stage::Idle | Stage::Done => return,
            Stage::Inner => {
                self.inner.handle(now, Input::Timeout);
                self.pump_inner(now);
                return;
            }
            _ => {}
        }
        let paused = self.stage == Stage::Paused;
        let busy = self.stage == Stage::Busy;
        let connected = self.connection == Connection::Connected;
        if let Some(step) = self.schedule.on_timeout(now, paused, busy, connected) {
            self.step(step);
        }
    }
}

impl Machine for SemaphoreMachine {
    type Output = Vec<Held>;

    fn handle(&mut self, now: Instant, input: Input) {
        match input {
            Input::Start if self.stage == Stage::Idle => {
                self.stage = Stage::Inner;
                self.inner.handle(now, Input::Start);
                self.pump_inner(now);
            }
            Input::Start => {}
            Input::Reply(reply) => self.on_reply(now, reply),
            Input::Watch { kind, path, event } => self.on_watch(now, kind, path, event),
            Input::Connection(c) => {
                if self.stage == Stage::Idle {
                    self.connection = c;
                    self.inner.handle(now, Input::Connection(c));
                } else {
                    self.on_connection(now, c);
                }
            }
            Input::Timeout => self.on_timeout(now),
            Input::Wake => {
                // The maximum may have grown: count again.
                if self.stage == Stage::Waiting {
                    self.list(false);
                }
            }
            Input::Abandon => {
                self.inner.handle(now, Input::Abandon);
                self.pump_inner(now);
                self.finish(Outcome::Failed(Failure::Abandoned));
            }
        }
        if self.stage != Stage::Inner && self.poll_timeout().is_some_and(|t| t <= now) {
            self.on_timeout(now);
        }
    }

    fn poll_op(&mut self) -> Option<Op> {
        self.outbox.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self.stage {
            Stage::Idle | Stage::Done => None,
            Stage::Inner => self.inner.poll_timeout(),
            _ => self.schedule.poll_timeout(),
        }
    }

    fn outcome(&self) -> Option<&Outcome<Vec<Held>>> {
        self.outcome.as_ref()
    }

    fn cleanups(&self) -> Vec<Cleanup> {
        if matches!(self.outcome, Some(Outcome::Held(_))) {
            return Vec::new();
        }
        let mut owed = Vec::new();
        for lease in &self.ours {
            owed.push(Cleanup::Delete(self.lease_path(&lease.name)));
        }
        if self.lost_create || self.creates_in_flight > 0 {
            owed.push(Cleanup::FindAndDelete {
                base: self.leases_dir.clone(),
                prefix: self.prefix.clone(),
            });
        }
        match &self.inner_held {
            Some(held) => owed.push(Cleanup::Delete(held.path.clone())),
            None => owed.extend(self.inner.cleanups()),
        }
        owed
    }

    fn releases(&self) -> Vec<Cleanup> {
        match (&self.outcome, &self.inner_held) {
            (Some(Outcome::Held(_)), Some(inner)) => vec![Cleanup::Delete(inner.path.clone())],
            _ => Vec::new(),
        }
    }
}
