//! [`AcquireMachine`]: one attempt to take a fair lock (mutex, read or write lock, the
//! semaphore's inner lock), as a [`Machine`].

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::machine::{Cleanup, Failure, Input, Machine, Outcome};
use crate::name::{node_prefix, protection_prefix, sort_key};
use crate::op::{Connection, NodeMode, Op, Reply, WatchEvent, ZkError};
use crate::predicate::{Predicate, Verdict};

/// A lock node we hold.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Held {
    /// Our node's full path.
    pub path: String,
    /// Its creation zxid: the fencing token, strictly increasing across the successive holders
    /// of a lock.
    pub czxid: i64,
}

/// How long past its deadline an attempt waits for replies already in flight while connected,
/// so that a free lock is taken even with a zero timeout (as in Curator). While disconnected
/// the attempt ends at its deadline.
pub const DEADLINE_GRACE: Duration = Duration::from_millis(500);

/// How long to wait before trying again after a failure that is neither a lost connection nor
/// final (the server throttled us, the session moved), or after a lost connection that the
/// session has not reported yet.
pub const RETRY_DELAY: Duration = Duration::from_millis(50);

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

/// What to do next, once the replies in flight are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Resume {
    List,
    CreateAndList,
    MakeParents,
    /// A create's reply was lost: sync, then find our node by its protection prefix.
    Recover,
}

/// When to do it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum When {
    /// At once (the failure was a real answer, such as `NoNode`).
    Now,
    /// Once connected to a read-write server again.
    Connected,
    /// After [`RETRY_DELAY`] (throttled, session moved, read-only for now).
    Later,
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
/// - past its deadline it ends at once while disconnected, and within [`DEADLINE_GRACE`] while
///   replies are in flight; its cleanups then say what to delete.
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
#[derive(Debug)]
pub struct AcquireMachine<P> {
    base: String,
    predicate: P,
    uuid: String,
    prefix: String,
    data: Bytes,
    deadline: Option<Instant>,
    phase: Phase,
    planned: Option<(Resume, When)>,
    retry_at: Option<Instant>,
    grace_until: Option<Instant>,
    connection: Connection,
    sent: VecDeque<Sent>,
    outbox: VecDeque<Op>,
    /// Our node's name (not path) and creation zxid, once known.
    ours: Option<String>,
    czxid: Option<i64>,
    /// A create of ours is in flight.
    create_in_flight: bool,
    /// A create's reply was lost: a node with our prefix may exist until a listing shows
    /// otherwise.
    lost_create: bool,
    /// The deadline passed while replies were in flight.
    timed_out: bool,
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
        Self {
            base: base.to_owned(),
            predicate,
            uuid: uuid.to_owned(),
            prefix: protection_prefix(uuid),
            data,
            deadline,
            phase: Phase::Idle,
            planned: None,
            retry_at: None,
            grace_until: None,
            connection: Connection::Connected,
            sent: VecDeque::new(),
            outbox: VecDeque::new(),
            ours: None,
            czxid: None,
            create_in_flight: false,
            lost_create: false,
            timed_out: false,
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

    fn child(&self, name: &str) -> String {
        child_path(&self.base, name)
    }

    fn send(&mut self, kind: Sent, op: Op) {
        self.sent.push_back(kind);
        self.outbox.push_back(op);
    }

    fn create_and_list(&mut self) {
        self.phase = Phase::Busy;
        self.create_in_flight = true;
        let create = Op::Create {
            path: self.child(&node_prefix(&self.uuid, self.predicate.lock_name())),
            mode: NodeMode::EphemeralSequential,
            data: self.data.clone(),
        };
        self.send(Sent::Create, create);
        self.list();
    }

    fn list(&mut self) {
        self.phase = Phase::Busy;
        let op = Op::Children {
            path: self.base.clone(),
            watch: false,
        };
        self.send(Sent::Children, op);
    }

    fn make_parents(&mut self) {
        self.phase = Phase::Busy;
        let op = Op::CreateParents {
            path: self.base.clone(),
        };
        self.send(Sent::CreateParents, op);
    }

    fn recover(&mut self) {
        self.phase = Phase::Busy;
        let op = Op::Sync {
            path: self.base.clone(),
        };
        self.send(Sent::Sync, op);
        self.list();
    }

    fn run(&mut self, resume: Resume) {
        self.planned = None;
        self.retry_at = None;
        match resume {
            Resume::MakeParents => self.make_parents(),
            Resume::CreateAndList => self.create_and_list(),
            Resume::Recover => self.recover(),
            Resume::List => self.list(),
        }
    }

    /// Plans what to do once the replies still in flight are in; the most demanding plan wins
    /// (recovering a lost create beats everything).
    fn plan(&mut self, resume: Resume, when: When) {
        self.planned = Some(match self.planned {
            Some((r, w)) if r >= resume => (r, w),
            _ => (resume, when),
        });
    }

    /// Carries out the plan, now that nothing is in flight.
    fn settle(&mut self, now: Instant) {
        let Some((resume, when)) = self.planned else {
            return;
        };
        if self.deadline_passed(now) {
            self.timed_out = true;
            let in_grace = self.grace_until.is_some_and(|g| now < g);
            if !(when == When::Now && in_grace && self.connection == Connection::Connected) {
                self.finish(Outcome::TimedOut);
                return;
            }
        }
        match when {
            When::Now => self.run(resume),
            When::Connected if self.connection != Connection::Connected => {
                self.phase = Phase::Paused;
            }
            // The session has not reported the loss yet (or the server asked us to back off):
            // try again shortly rather than at once.
            When::Connected | When::Later => {
                self.phase = Phase::Paused;
                self.retry_at = Some(now + RETRY_DELAY);
            }
        }
    }

    fn finish(&mut self, outcome: Outcome<Held>) {
        self.phase = Phase::Done;
        self.planned = None;
        self.retry_at = None;
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
        self.deadline.is_some_and(|d| now >= d)
    }

    /// The deadline passed with replies in flight: wait for them until the grace ends.
    fn start_grace(&mut self, now: Instant) {
        self.timed_out = true;
        if self.grace_until.is_none() {
            self.grace_until = Some(now + DEADLINE_GRACE);
        }
    }

    fn on_reply(&mut self, now: Instant, reply: Reply) {
        let Some(kind) = self.sent.pop_front() else {
            return;
        };
        // Bookkeeping first: it decides the cleanups, also once the attempt is over.
        if kind == Sent::Create {
            self.create_in_flight = false;
            match &reply {
                Reply::Created { path, czxid } => {
                    self.ours = path.rsplit('/').next().map(str::to_owned);
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
            (Sent::Children, _) if self.planned.is_some() => {}
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
        match e {
            ZkError::ConnectionLoss | ZkError::NotSent => self.plan(resume, When::Connected),
            ZkError::Transient => self.plan(resume, When::Later),
            e => self.fail(e),
        }
    }

    fn vanished(&mut self) {
        self.ours = None;
        self.finish(Outcome::Failed(Failure::NodeVanished));
    }

    fn on_children(&mut self, now: Instant, mut children: Vec<String>) {
        let Some(ours) = self.ours.clone() else {
            // After a lost create reply and a sync: is our node there?
            match children.iter().find(|c| c.starts_with(&self.prefix)) {
                Some(found) => {
                    let found = found.clone();
                    self.ours = Some(found.clone());
                    self.lost_create = false;
                    // Its czxid, then one more listing to decide (pipelined).
                    let op = Op::Exists {
                        path: self.child(&found),
                        watch: false,
                    };
                    self.send(Sent::Exists, op);
                    self.list();
                }
                None => {
                    // Not applied: create again with the same protection id, as Curator does.
                    self.lost_create = false;
                    self.plan(Resume::CreateAndList, When::Now);
                }
            }
            return;
        };
        // A second node of ours (a create re-sent after a lost reply, applied after all):
        // delete it, so it cannot block the lock.
        let twins: Vec<String> = children
            .iter()
            .filter(|c| c.starts_with(&self.prefix) && **c != ours)
            .cloned()
            .collect();
        for twin in twins {
            let op = Op::Delete {
                path: self.child(&twin),
            };
            self.send(Sent::DeleteTwin, op);
        }
        children.retain(|c| !c.starts_with(&self.prefix) || *c == ours);
        if sort_key(&ours, self.predicate.lock_name()).starts_with('-') {
            // The parent's sequence counter wrapped: in Curator's order our node would jump
            // ahead of older ones. Never hold on that.
            self.finish(Outcome::Failed(Failure::SequenceWrapped));
            return;
        }
        self.predicate.sort(&mut children);
        match self.predicate.verdict(&children, &ours) {
            Err(_) => self.vanished(),
            Ok(Verdict::Hold) => match self.czxid {
                Some(czxid) => {
                    let path = self.child(&ours);
                    self.finish(Outcome::Held(Held { path, czxid }));
                }
                None => self.fail(ZkError::Other),
            },
            Ok(Verdict::Watch(_)) if self.timed_out || self.deadline_passed(now) => {
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
    }

    fn on_connection(&mut self, now: Instant, connection: Connection) {
        self.connection = connection;
        match connection {
            Connection::Expired => {
                self.forget_everything();
                self.finish(Outcome::Failed(Failure::SessionExpired));
            }
            Connection::Lost => self.finish(Outcome::Failed(Failure::SessionLost)),
            Connection::Disconnected | Connection::ReadOnly => {
                // Replies in flight fail with a connection loss; wait for the session to come
                // back to a read-write server. Past the deadline, give up now.
                self.retry_at = None;
                if self.deadline_passed(now) {
                    self.finish(Outcome::TimedOut);
                }
            }
            Connection::Connected => {
                if self.phase == Phase::Paused && self.sent.is_empty() {
                    if self.deadline_passed(now) {
                        self.finish(Outcome::TimedOut);
                    } else if let Some((resume, _)) = self.planned {
                        self.run(resume);
                    }
                }
            }
        }
    }

    fn on_timeout(&mut self, now: Instant) {
        if self.phase == Phase::Done {
            return;
        }
        if self.retry_at.is_some_and(|at| now >= at) && self.phase == Phase::Paused {
            self.retry_at = None;
            if let Some((resume, _)) = self.planned {
                if self.connection == Connection::Connected && !self.deadline_passed(now) {
                    self.run(resume);
                    return;
                }
            }
        }
        if !self.deadline_passed(now) {
            return;
        }
        match self.phase {
            Phase::Busy => {
                // Replies in flight: wait a little for them while connected, so a free lock is
                // still taken; then give up and leave them to the cleanups.
                self.start_grace(now);
                let over = self.grace_until.is_some_and(|g| now >= g);
                if over || self.connection != Connection::Connected {
                    self.finish(Outcome::TimedOut);
                }
            }
            Phase::Waiting | Phase::Paused | Phase::Idle => self.finish(Outcome::TimedOut),
            Phase::Done => {}
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
                    self.start_grace(now);
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
        let deadline = if self.timed_out {
            self.grace_until
        } else {
            self.deadline
        };
        [deadline, self.retry_at].into_iter().flatten().min()
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
                base: self.base.clone(),
                prefix: self.prefix.clone(),
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
