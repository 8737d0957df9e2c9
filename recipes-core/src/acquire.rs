//! [`AcquireMachine`]: one attempt to take a fair lock (mutex, read or write lock, the
//! semaphore's inner lock), as a [`Machine`].

use std::time::Instant;

use bytes::Bytes;

use crate::machine::{Cleanup, Failure, Input, Machine, Outcome};
use crate::name::{node_path, sort_key};
use crate::op::{Connection, NodeMode, Op, Reply, WatchEvent, ZkError};
use crate::predicate::{Predicate, Verdict};
use crate::queue::Queue;
use crate::schedule::{Resume, Schedule, Step, When};

/// A lock node we hold.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Held {
    /// Our node's full path.
    pub path: String,
    /// Its creation zxid: the fencing token, strictly increasing across the successive holders
    /// of a lock.
    pub czxid: i64,
}

/// What a sent op was for, to route its reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    Create,
    Children,
    Watch,
    Exists,
    Sync,
    CreateParents,
    DeleteTwin,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before `Start`.
    Idle,
    /// Ops in flight; their replies decide what comes next.
    Busy,
    /// Waiting for the watched node's event.
    Waiting,
    /// Waiting for the connection (or the retry timer) to do `resume`.
    Paused,
    /// Finished; see `outcome`.
    Done,
}

/// One attempt to take a fair lock under `base`, Curator's way: create an
/// `EPHEMERAL_SEQUENTIAL` child `_c_<uuid>-<lockName>`, list the children, sort them, and hold
/// if the predicate says so; otherwise watch the node it names (with `getData`) and list again
/// when it changes. The create and the first listing are sent together, so an uncontended lock
/// takes one round trip (Curator needs two).
///
/// Safety rules beyond the happy path:
/// - it holds only after a listing that shows its own node in a holding position (never on a
///   watched node's deletion alone: our node may have gone, or a node that sorts before ours may
///   have appeared);
/// - after a lost create reply it `sync`s, then looks for its node by the protection prefix; it
///   keeps the duty to delete by prefix until a listing settles whether the create was applied,
///   and deletes any second node of its own (a create re-sent with the same prefix) it sees;
/// - it never holds through a node whose sequence number wrapped past 2^31 (negative: it would
///   sort before older nodes), failing with [`Failure::SequenceWrapped`] instead;
/// - past its deadline it ends at once while disconnected, and while replies are in flight
///   within [`DEADLINE_GRACE`](crate::DEADLINE_GRACE) of the deadline; its cleanups then say
///   what to delete.
///
/// # Examples
///
/// ```
/// use std::time::Instant;
/// use recipes_core::{AcquireMachine, Exclusive, Held, Input, Machine, Op, Outcome, Reply};
///
/// let now = Instant::now();
/// let mut m = AcquireMachine::new("/locks/a", Exclusive::mutex(), "3f0c6a52-8f7e-4b1e-9a53-2d6f0e1c9b7a", Default::default(), None);
/// m.handle(now, Input::Start);
/// assert!(matches!(m.poll_op(), Some(Op::Create { .. })));
/// assert!(matches!(m.poll_op(), Some(Op::Children { .. })));
/// let ours = "_c_3f0c6a52-8f7e-4b1e-9a53-2d6f0e1c9b7a-lock-0000000000";
/// m.handle(now, Input::Reply(Reply::Created { path: format!("/locks/a/{ours}"), czxid: 7 }));
/// m.handle(now, Input::Reply(Reply::Children(vec![ours.to_owned()])));
/// assert_eq!(m.outcome(), Some(&Outcome::Held(Held { path: format!("/locks/a/{ours}"), czxid: 7 })));
/// ```
#[derive(Debug, Clone)]
pub struct AcquireMachine<P> {
    /// `base/_c_<uuid>-<lock name>`, the path our node is created with: the base and the
    /// protection prefix (what our node's name starts with) are slices of it.
    stem: String,
    /// Where the base ends in `stem`.
    base_end: usize,
    /// Where the protection prefix is in `stem`.
    prefix_at: std::ops::Range<usize>,
    predicate: P,
    data: Bytes,
    phase: Phase,
    /// The plan, the deadline and its grace, the retry timer.
    schedule: Schedule,
    connection: Connection,
    sent: Queue<Sent, 4>,
    outbox: Queue<Op, 4>,
    /// Our node's name (not path) and creation zxid, once known.
    ours: Option<String>,
    czxid: Option<i64>,
    /// A create of ours is in flight.
    create_in_flight: bool,
    /// A create's reply was lost: a node with our prefix may exist until a listing shows
    /// otherwise.
    lost_create: bool,
    outcome: Option<Outcome<Held>>,
}

impl<P: Predicate> AcquireMachine<P> {
    /// An attempt on lock `base` (validated by the caller) with protection id `uuid` (a fresh
    /// random UUID per attempt), node data `data`, and an optional deadline.
    pub fn new(
        base: &str,
        predicate: P,
        uuid: &str,
        data: Bytes,
        deadline: Option<Instant>,
    ) -> Self {
        let (stem, prefix_at) = node_path(base, uuid, predicate.lock_name());
        // The stem starts with the base (`/` included for the root).
        let base_end = base.len();
        Self {
            stem,
            base_end,
            prefix_at,
            predicate,
            data,
            phase: Phase::Idle,
            schedule: Schedule::new(deadline),
            connection: Connection::Connected,
            sent: Queue::new(),
            outbox: Queue::new(),
            ours: None,
            czxid: None,
            create_in_flight: false,
            lost_create: false,
            outcome: None,
        }
    }

    /// The predicate.
    pub fn predicate(&self) -> &P {
        &self.predicate
    }

    /// Our node's full path, once known.
    pub fn our_path(&self) -> Option<String> {
        self.ours.as_ref().map(|n| self.child(n))
    }

    /// The lock's base path.
    fn base(&self) -> &str {
        self.stem.get(..self.base_end).unwrap_or_default()
    }

    /// `_c_<uuid>-`: what our node's name starts with.
    fn prefix(&self) -> &str {
        self.stem.get(self.prefix_at.clone()).unwrap_or_default()
    }

    fn child(&self, name: &str) -> String {
        child_path(self.base(), name)
    }

    fn send(&mut self, kind: Sent, op: Op) {
        self.sent.push_back(kind);
        self.outbox.push_back(op);
    }

    fn create_and_list(&mut self) {
        self.phase = Phase::Busy;
        self.create_in_flight = true;
        let create = Op::Create {
            path: self.stem.clone(),
            mode: NodeMode::EphemeralSequential,
            data: self.data.clone(),
        };
        self.send(Sent::Create, create);
        self.list();
    }

    fn list(&mut self) {
        self.phase = Phase::Busy;
        let op = Op::Children {
            path: self.base().to_owned(),
            watch: false,
        };
        self.send(Sent::Children, op);
    }

    fn make_parents(&mut self) {
        self.phase = Phase::Busy;
        let op = Op::CreateParents {
            path: self.base().to_owned(),
        };
        self.send(Sent::CreateParents, op);
    }

    fn recover(&mut self) {
        self.phase = Phase::Busy;
        let op = Op::Sync {
            path: self.base().to_owned(),
        };
        self.send(Sent::Sync, op);
        self.list();
    }

    fn run(&mut self, resume: Resume) {
        self.schedule.clear();
        match resume {
            Resume::MakeParents => self.make_parents(),
            Resume::CreateAndList => self.create_and_list(),
            Resume::Recover => self.recover(),
            Resume::List => self.list(),
        }
    }

    /// Plans what to do once the replies still in flight are in (see [`Schedule::plan`]).
    fn plan(&mut self, resume: Resume, when: When) {
        self.schedule.plan(resume, when);
    }

    /// Carries out the plan, now that nothing is in flight.
    fn settle(&mut self, now: Instant) {
        let connected = self.connection == Connection::Connected;
        if let Some(step) = self.schedule.settle(now, connected) {
            self.step(step);
        }
    }

    fn step(&mut self, step: Step) {
        match step {
            Step::Run(resume) => self.run(resume),
            Step::Pause => self.phase = Phase::Paused,
            Step::TimedOut => self.finish(Outcome::TimedOut),
        }
    }

    fn finish(&mut self, outcome: Outcome<Held>) {
        self.phase = Phase::Done;
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

    /// The session is gone: so are our ephemeral nodes.
    fn forget_everything(&mut self) {
        self.ours = None;
        self.lost_create = false;
        self.create_in_flight = false;
    }

    fn deadline_passed(&self, now: Instant) -> bool {
        self.schedule.deadline_passed(now)
    }

    fn on_reply(&mut self, now: Instant, mut reply: Reply) {
        let Some(kind) = self.sent.pop_front() else {
            return;
        };
        // Bookkeeping first: it decides the cleanups, also once the attempt is over.
        if kind == Sent::Create {
            self.create_in_flight = false;
            match &mut reply {
                Reply::Created { path, czxid } => {
                    // The path becomes the name, in place.
                    if let Some(slash) = path.rfind('/') {
                        path.replace_range(..=slash, "");
                    }
                    self.ours = Some(std::mem::take(path));
                    self.czxid = Some(*czxid);
                }
                Reply::Failed(e) if e.is_uncertain() || *e == ZkError::Transient => {
                    self.lost_create = true;
                }
                _ => {}
            }
        }
        if self.phase == Phase::Done {
            // Ended or abandoned: a node created meanwhile is owed to the cleanups.
            return;
        }
        match (kind, reply) {
            (Sent::Create, Reply::Created { .. }) => {} // the listing follows
            // The base is missing; the pipelined listing fails too. Make the parents (as
            // containers), then create again.
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

            (Sent::Sync, _) => {} // the listing that follows decides

            // Sent with an op that failed and already decided what comes next.
            (Sent::Children, _) if self.schedule.is_planned() => {}
            (Sent::Children, Reply::Children(children)) => self.on_children(now, children),
            (Sent::Children, Reply::Failed(ZkError::NoNode)) if self.ours.is_none() => {
                // Looking for a lost create, the base is gone: the create was not applied (or
                // its node went with the container). Start over, parents first.
                self.lost_create = false;
                self.plan(Resume::MakeParents, When::Now);
            }
            (Sent::Children, Reply::Failed(ZkError::NoNode)) => self.vanished(),
            (Sent::Children, Reply::Failed(e)) => {
                let resume = if self.ours.is_some() {
                    Resume::List
                } else {
                    Resume::Recover
                };
                self.retry_or_fail(e, resume);
            }
            (Sent::Children, _) => self.fail(ZkError::Other),

            (Sent::Watch, Reply::Data { .. }) => {
                self.phase = Phase::Waiting;
                if self.deadline_passed(now) {
                    self.finish(Outcome::TimedOut);
                }
            }
            // The predecessor went before the watch was set: look again.
            (Sent::Watch, Reply::Failed(ZkError::NoNode)) => self.plan(Resume::List, When::Now),
            (Sent::Watch, Reply::Failed(e)) => self.retry_or_fail(e, Resume::List),
            (Sent::Watch, _) => self.fail(ZkError::Other),

            (Sent::Exists, Reply::Exists(Some(czxid))) => self.czxid = Some(czxid),
            (Sent::Exists, _) => {} // the listing that follows decides

            (Sent::DeleteTwin, _) => {}
        }
        if self.phase != Phase::Done && self.sent.is_empty() {
            self.settle(now);
        }
    }

    /// A failure of a listing, a watch or a parents' create: wait for the connection, retry
    /// later, or give up.
    fn retry_or_fail(&mut self, e: ZkError, resume: Resume) {
        if let Err(e) = self.schedule.retry_or_fail(e, resume) {
            self.fail(e);
        }
    }

    fn vanished(&mut self) {
        self.ours = None;
        self.finish(Outcome::Failed(Failure::NodeVanished));
    }

    fn on_children(&mut self, now: Instant, children: Vec<String>) {
        // Taken while the listing is judged (no copy), put back unless it vanished.
        let Some(ours) = self.ours.take() else {
            // After a lost create reply and a sync: is our node there?
            match children.iter().find(|c| c.starts_with(self.prefix())) {
                Some(found) => {
                    let found = found.clone();
                    self.ours = Some(found.clone());
                    self.lost_create = false;
                    self.ask_czxid(&found);
                }
                None => {
                    // Not applied: create again with the same protection id, as Curator does.
                    self.lost_create = false;
                    self.plan(Resume::CreateAndList, When::Now);
                }
            }
            return;
        };
        if self.judge(now, children, &ours) {
            self.ours = Some(ours);
        }
    }

    /// Decides on a listing with our node `ours`; false when it is not there (vanished).
    fn judge(&mut self, now: Instant, mut children: Vec<String>, ours: &str) -> bool {
        // A second node of ours (a create re-sent after a lost reply, applied after all):
        // delete it, so it cannot block the lock.
        let twins: Vec<String> = children
            .iter()
            .filter(|c| c.starts_with(self.prefix()) && *c != ours)
            .cloned()
            .collect();
        for twin in twins {
            let op = Op::Delete {
                path: self.child(&twin),
            };
            self.send(Sent::DeleteTwin, op);
        }
        children.retain(|c| !c.starts_with(self.prefix()) || c == ours);
        if sort_key(ours, self.predicate.lock_name()).starts_with('-') {
            // The parent's sequence counter wrapped: in Curator's order our node would jump
            // ahead of older ones. Never hold on that.
            self.finish(Outcome::Failed(Failure::SequenceWrapped));
            return true;
        }
        self.predicate.sort(&mut children);
        match self.predicate.verdict(&children, ours) {
            Err(_) => {
                self.vanished();
                return false;
            }
            Ok(Verdict::Hold) => match self.czxid {
                Some(czxid) => {
                    let path = self.child(ours);
                    self.finish(Outcome::Held(Held { path, czxid }));
                }
                // Found after a lost create reply, and the `Exists` that was to tell its czxid
                // was lost too: ask again (the fencing token is the czxid; never hold
                // without it).
                None => self.ask_czxid(ours),
            },
            Ok(Verdict::Watch(_)) if self.schedule.timed_out() || self.deadline_passed(now) => {
                self.finish(Outcome::TimedOut);
            }
            Ok(Verdict::Watch(pred)) => {
                let op = Op::GetData {
                    path: self.child(&pred),
                    watch: true,
                };
                self.phase = Phase::Busy;
                self.send(Sent::Watch, op);
            }
        }
        true
    }

    /// Our node `ours` was found by its prefix: ask its czxid, then list once more to decide
    /// (pipelined). A failed `Exists` is not waited on: the listing's failure plans the retry,
    /// and a listing that shows our node in front asks again.
    fn ask_czxid(&mut self, ours: &str) {
        let op = Op::Exists {
            path: self.child(ours),
            watch: false,
        };
        self.send(Sent::Exists, op);
        self.list();
    }

    fn on_connection(&mut self, now: Instant, connection: Connection) {
        self.connection = connection;
        match connection {
            Connection::Expired => {
                self.forget_everything();
                self.finish(Outcome::Failed(Failure::SessionExpired));
            }
            // Lost (no server for the session timeout) is not the end: the session may have
            // survived (a server back just in time), so wait on as for a disconnect and let the
            // next `Connected` or `Expired` decide, within the deadline (Curator's waiter keeps
            // going too). A holder's `lost()` reports it at once; that is not this machine.
            Connection::Lost | Connection::Disconnected | Connection::ReadOnly => {
                if crate::plant::grant_on_disconnect() && self.phase == Phase::Waiting {
                    // The planted defect: hold on a connection loss, whatever is ahead.
                    if let (Some(ours), Some(czxid)) = (self.ours.clone(), self.czxid) {
                        let path = self.child(&ours);
                        self.finish(Outcome::Held(Held { path, czxid }));
                        return;
                    }
                }
                // Replies in flight fail with a connection loss; wait for the session to come
                // back to a read-write server. Past the deadline, give up now.
                if let Some(step) = self.schedule.on_disconnect(now) {
                    self.step(step);
                }
            }
            Connection::Connected => {
                if self.phase == Phase::Paused && self.sent.is_empty() {
                    if let Some(step) = self.schedule.on_reconnect(now) {
                        self.step(step);
                    }
                }
            }
        }
    }

    fn on_timeout(&mut self, now: Instant) {
        if self.phase == Phase::Done {
            return;
        }
        let paused = self.phase == Phase::Paused;
        let busy = self.phase == Phase::Busy;
        let connected = self.connection == Connection::Connected;
        if let Some(step) = self.schedule.on_timeout(now, paused, busy, connected) {
            self.step(step);
        }
    }
}

impl<P: Predicate> Machine for AcquireMachine<P> {
    type Output = Held;

    fn handle(&mut self, now: Instant, input: Input) {
        match input {
            Input::Start if self.phase == Phase::Idle => {
                if self.deadline_passed(now) {
                    // A zero timeout still tries once (Curator takes a free lock with it).
                    self.schedule.start_grace(now);
                }
                if self.connection == Connection::Connected {
                    self.create_and_list();
                } else {
                    self.plan(Resume::CreateAndList, When::Connected);
                    self.settle(now);
                }
            }
            Input::Start => {}
            Input::Reply(reply) => self.on_reply(now, reply),
            Input::Watch { event, .. } => {
                let planted = crate::plant::hand_off_shortcut();
                if planted && self.phase == Phase::Waiting && event == WatchEvent::Deleted {
                    // The planted defect: hold on the predecessor's deletion, unlooked.
                    if let (Some(ours), Some(czxid)) = (self.ours.clone(), self.czxid) {
                        let path = self.child(&ours);
                        self.finish(Outcome::Held(Held { path, czxid }));
                        return;
                    }
                }
                if self.phase == Phase::Waiting && event != WatchEvent::SessionEnded {
                    // Whatever happened to the node we wait on, look again: only a listing
                    // that shows our node in front lets us hold.
                    self.list();
                }
            }
            Input::Connection(c) => self.on_connection(now, c),
            Input::Timeout => self.on_timeout(now),
            Input::Wake => {}
            Input::Abandon => self.finish(Outcome::Failed(Failure::Abandoned)),
        }
        // Whatever the input, a deadline (or retry time) that has passed is acted on now, so
        // the timer is never left in the past.
        if self.poll_timeout().is_some_and(|t| t <= now) {
            self.on_timeout(now);
        }
    }

    fn poll_op(&mut self) -> Option<Op> {
        self.outbox.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.phase == Phase::Done {
            return None;
        }
        self.schedule.poll_timeout()
    }

    fn outcome(&self) -> Option<&Outcome<Held>> {
        self.outcome.as_ref()
    }

    fn cleanups(&self) -> Vec<Cleanup> {
        if matches!(self.outcome, Some(Outcome::Held(_))) {
            return Vec::new();
        }
        let mut owed = Vec::new();
        if let Some(name) = &self.ours {
            owed.push(Cleanup::Delete(self.child(name)));
        }
        if self.lost_create || (self.create_in_flight && self.ours.is_none()) {
            owed.push(Cleanup::FindAndDelete {
                base: self.base().to_owned(),
                prefix: self.prefix().to_owned(),
            });
        }
        owed
    }
}

/// `base/name`, without a double slash under the root.
pub fn child_path(base: &str, name: &str) -> String {
    let base = if base == "/" { "" } else { base };
    let mut path = String::with_capacity(base.len() + 1 + name.len());
    path.push_str(base);
    path.push('/');
    path.push_str(name);
    path
}
