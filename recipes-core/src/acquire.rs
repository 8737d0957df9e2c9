//! [`AcquireMachine`]: one attempt to take a fair lock, as a machine fed with replies, watch
//! events, connection changes and the time.

use std::collections::VecDeque;
use std::time::Instant;

use bytes::Bytes;

use crate::name::{node_prefix, protection_prefix};
use crate::op::{Connection, Op, Reply, ZkError};
use crate::predicate::{Predicate, Verdict};

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// We hold the lock through this node.
    Held {
        /// Our node's full path.
        path: String,
        /// Its creation zxid: the fencing token, strictly increasing across the successive
        /// holders of a lock.
        czxid: i64,
    },
    /// The deadline passed first. [`AcquireMachine::cleanup`] says which node to delete.
    TimedOut,
    /// The attempt failed.
    Failed(Failure),
}

/// Why an attempt failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The session expired; nothing of ours is left.
    SessionExpired,
    /// The session is locally lost (no server for its whole timeout).
    SessionLost,
    /// Our node vanished (deleted under us, or the base container was removed); Curator then
    /// retries with a new node, and so does the driver, within the same deadline.
    NodeVanished,
    /// An op failed with an error the driver kept.
    Zk,
}

/// What must still happen when an attempt is abandoned (timed out, failed, or dropped by its
/// caller) so that no node of ours is left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cleanup {
    /// Nothing of ours can exist.
    Nothing,
    /// Delete our node.
    Delete(String),
    /// A create may have been applied without our hearing of it: list `base` and delete any
    /// child starting with `prefix` (the protection prefix).
    FindAndDelete {
        /// The base path.
        base: String,
        /// `_c_<uuid>-`.
        prefix: String,
    },
}

/// What a sent op was for, to route its reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    Create,
    Children,
    Watch,
    Stat,
    CreateParents,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// Create ‖ children in flight.
    Creating,
    /// The create's reply was lost: after reconnecting, find our node by its prefix.
    Recovering,
    /// Children in flight (our node known).
    Listing,
    /// The predecessor's getData+watch in flight.
    Watching,
    /// Waiting for the predecessor's watch event, or the deadline.
    Waiting,
    /// A list failed with a connection loss: list again once connected.
    Reconnecting,
    /// Parents being created, then create again.
    MakingParents,
    /// Finished; see `outcome`.
    Done,
}

/// One attempt to take a fair lock under `base`, Curator's way: create an
/// `EPHEMERAL_SEQUENTIAL` child `_c_<uuid>-<lockName>`, list the children, sort them, and
/// hold if the predicate says so; otherwise watch the node it names (with `getData`) and list
/// again when it changes. The create and the first listing are sent together, so an
/// uncontended lock takes one round trip (Curator needs two).
///
/// # Calling contract
///
/// Inputs, each taking `now` (never going back) and answering with the ops to send next, in
/// order: [`AcquireMachine::start`] once; [`AcquireMachine::on_reply`] for each op's result,
/// in the order the ops were issued; [`AcquireMachine::on_watch`] when the watched node
/// changes or goes; [`AcquireMachine::on_state`] on connection changes;
/// [`AcquireMachine::on_timeout`] once [`AcquireMachine::poll_timeout`] has passed. When
/// [`AcquireMachine::outcome`] is set the attempt is over; if it is not `Held`, run
/// [`AcquireMachine::cleanup`].
///
/// # Examples
///
/// ```
/// use std::time::Instant;
/// use recipes_core::{AcquireMachine, Exclusive, Op, Outcome, Reply};
///
/// let now = Instant::now();
/// let mut m = AcquireMachine::new("/locks/a", Exclusive::mutex(), "3f0c6a52-8f7e-4b1e-9a53-2d6f0e1c9b7a", Default::default(), None);
/// let ops = m.start(now);
/// assert!(matches!(&ops[..], [Op::Create { .. }, Op::Children { .. }]));
/// let ours = "_c_3f0c6a52-8f7e-4b1e-9a53-2d6f0e1c9b7a-lock-0000000000";
/// m.on_reply(now, Reply::Created { path: format!("/locks/a/{ours}"), czxid: 7 });
/// m.on_reply(now, Reply::Children(vec![ours.to_owned()]));
/// assert_eq!(m.outcome(), Some(&Outcome::Held { path: format!("/locks/a/{ours}"), czxid: 7 }));
/// ```
#[derive(Debug)]
pub struct AcquireMachine<P> {
    base: String,
    predicate: P,
    uuid: String,
    data: Bytes,
    deadline: Option<Instant>,
    phase: Phase,
    sent: VecDeque<Sent>,
    /// Our node's name (not path) and creation zxid, once known.
    ours: Option<String>,
    czxid: Option<i64>,
    /// A create may be applied without our knowing its name (reply lost or pending).
    create_unconfirmed: bool,
    /// The deadline passed while a reply we need was in flight.
    timed_out: bool,
    /// The watched node's deletion means we hold (see `Predicate::holds_when_watched_goes`).
    hold_when_watched_goes: bool,
    outcome: Option<Outcome>,
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
            data,
            deadline,
            phase: Phase::Creating,
            sent: VecDeque::new(),
            ours: None,
            czxid: None,
            create_unconfirmed: false,
            timed_out: false,
            hold_when_watched_goes: false,
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

    /// How the attempt ended, once it has.
    pub fn outcome(&self) -> Option<&Outcome> {
        self.outcome.as_ref()
    }

    /// When [`AcquireMachine::on_timeout`] is due: the deadline, while we wait.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.phase {
            Phase::Done => None,
            _ => self.deadline,
        }
    }

    /// What to delete if the attempt is abandoned now (or did not end `Held`).
    pub fn cleanup(&self) -> Cleanup {
        if matches!(self.outcome, Some(Outcome::Held { .. })) {
            return Cleanup::Nothing;
        }
        match (&self.ours, self.create_unconfirmed) {
            (Some(name), _) => Cleanup::Delete(self.child(name)),
            (None, true) => Cleanup::FindAndDelete {
                base: self.base.clone(),
                prefix: protection_prefix(&self.uuid),
            },
            (None, false) => Cleanup::Nothing,
        }
    }

    fn child(&self, name: &str) -> String {
        if self.base == "/" {
            format!("/{name}")
        } else {
            format!("{}/{name}", self.base)
        }
    }

    fn send(&mut self, ops: Vec<(Sent, Op)>) -> Vec<Op> {
        ops.into_iter()
            .map(|(kind, op)| {
                self.sent.push_back(kind);
                op
            })
            .collect()
    }

    fn create_and_list(&mut self) -> Vec<Op> {
        self.phase = Phase::Creating;
        self.create_unconfirmed = true;
        let create = Op::Create {
            path: self.child(&node_prefix(&self.uuid, self.predicate.lock_name())),
            data: self.data.clone(),
        };
        let list = Op::Children {
            path: self.base.clone(),
        };
        self.send(vec![(Sent::Create, create), (Sent::Children, list)])
    }

    fn list(&mut self, phase: Phase) -> Vec<Op> {
        self.phase = phase;
        let list = Op::Children {
            path: self.base.clone(),
        };
        self.send(vec![(Sent::Children, list)])
    }

    fn finish(&mut self, outcome: Outcome) -> Vec<Op> {
        self.phase = Phase::Done;
        self.outcome = Some(outcome);
        Vec::new()
    }

    /// Starts the attempt: create our node and list the children, in one flight.
    pub fn start(&mut self, _now: Instant) -> Vec<Op> {
        self.create_and_list()
    }

    /// The result of the oldest op not yet answered.
    pub fn on_reply(&mut self, now: Instant, reply: Reply) -> Vec<Op> {
        let Some(kind) = self.sent.pop_front() else {
            return Vec::new();
        };
        if self.phase == Phase::Done {
            return Vec::new();
        }
        match (kind, reply) {
            (Sent::Create, Reply::Created { path, czxid }) => {
                self.ours = path.rsplit('/').next().map(str::to_owned);
                self.czxid = Some(czxid);
                self.create_unconfirmed = false;
                self.phase = Phase::Listing;
                Vec::new()
            }
            (Sent::Create, Reply::Failed(ZkError::NoNode)) => {
                // The base is missing: the pipelined listing fails too. Make the parents
                // (as containers), then try again.
                self.create_unconfirmed = false;
                self.phase = Phase::MakingParents;
                let op = Op::CreateParents {
                    path: self.base.clone(),
                };
                self.send(vec![(Sent::CreateParents, op)])
            }
            (Sent::Create, Reply::Failed(ZkError::ConnectionLoss)) => {
                // Applied or not, we cannot tell: find it by its prefix once connected.
                self.phase = Phase::Recovering;
                Vec::new()
            }
            (Sent::Create, Reply::Failed(e)) => {
                self.create_unconfirmed = false;
                self.fail(e)
            }
            (Sent::Create, _) => self.fail(ZkError::Other),
            (Sent::CreateParents, Reply::Done) => self.create_and_list(),
            (Sent::CreateParents, Reply::Failed(ZkError::ConnectionLoss)) => {
                self.phase = Phase::Reconnecting;
                Vec::new()
            }
            (Sent::CreateParents, Reply::Failed(e)) => self.fail(e),
            (Sent::Children, Reply::Children(children)) => self.on_children(now, children),
            (Sent::Children, Reply::Failed(e)) => match (&self.phase, e) {
                // The create failed and this listing with it: already handled.
                (Phase::MakingParents | Phase::Recovering, _) => Vec::new(),
                (_, ZkError::ConnectionLoss) => {
                    self.phase = Phase::Reconnecting;
                    Vec::new()
                }
                (_, ZkError::NoNode) => self.finish(Outcome::Failed(Failure::NodeVanished)),
                (_, e) => self.fail(e),
            },
            (Sent::Watch, Reply::Watching) => {
                self.phase = Phase::Waiting;
                if self.past_deadline(now) {
                    self.finish(Outcome::TimedOut)
                } else {
                    Vec::new()
                }
            }
            // The predecessor went before the watch was set: ours, or look again at once.
            (Sent::Watch, Reply::Failed(ZkError::NoNode)) => self.watched_went(),
            (Sent::Watch, Reply::Failed(ZkError::ConnectionLoss)) => {
                self.phase = Phase::Reconnecting;
                Vec::new()
            }
            (Sent::Watch, Reply::Failed(e)) => self.fail(e),
            (Sent::Stat, Reply::Stat { czxid }) => {
                self.czxid = Some(czxid);
                self.list(Phase::Listing)
            }
            (Sent::Stat, Reply::Failed(ZkError::NoNode)) => {
                self.finish(Outcome::Failed(Failure::NodeVanished))
            }
            (Sent::Stat, Reply::Failed(ZkError::ConnectionLoss)) => {
                self.phase = Phase::Recovering;
                Vec::new()
            }
            (Sent::Stat, Reply::Failed(e)) => self.fail(e),
            (_, _) => self.fail(ZkError::Other),
        }
    }

    fn on_children(&mut self, now: Instant, mut children: Vec<String>) -> Vec<Op> {
        if self.phase == Phase::Recovering {
            // After a lost create reply: is our node there?
            let prefix = protection_prefix(&self.uuid);
            match children.iter().find(|c| c.starts_with(&prefix)) {
                Some(found) => {
                    self.ours = Some(found.clone());
                    self.create_unconfirmed = false;
                    self.phase = Phase::Listing;
                    let op = Op::Stat {
                        path: self.child(found),
                    };
                    return self.send(vec![(Sent::Stat, op)]);
                }
                None => return self.create_and_list(),
            }
        }
        let Some(ours) = self.ours.clone() else {
            // A listing whose create failed; the create's reply decided already.
            return Vec::new();
        };
        self.predicate.sort(&mut children);
        match self.predicate.verdict(&children, &ours) {
            Err(_) => self.finish(Outcome::Failed(Failure::NodeVanished)),
            Ok(Verdict::Hold) => match self.czxid {
                Some(czxid) => {
                    let path = self.child(&ours);
                    self.finish(Outcome::Held { path, czxid })
                }
                None => self.fail(ZkError::Other),
            },
            Ok(Verdict::Watch(_)) if self.timed_out || self.past_deadline(now) => {
                self.finish(Outcome::TimedOut)
            }
            Ok(Verdict::Watch(pred)) => {
                self.hold_when_watched_goes =
                    self.predicate.holds_when_watched_goes(&children, &ours);
                self.phase = Phase::Watching;
                let op = Op::Watch {
                    path: self.child(&pred),
                };
                self.send(vec![(Sent::Watch, op)])
            }
        }
    }

    fn past_deadline(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now >= d)
    }

    fn fail(&mut self, e: ZkError) -> Vec<Op> {
        let failure = match e {
            ZkError::SessionExpired => Failure::SessionExpired,
            ZkError::NoNode => Failure::NodeVanished,
            ZkError::ConnectionLoss | ZkError::Other => Failure::Zk,
        };
        self.finish(Outcome::Failed(failure))
    }

    /// The watched node's watch fired: `deleted` when the node went (`NodeDeleted`), false
    /// for any other event (data changed, the watch ended with the session). Lists again,
    /// unless the node's deletion is enough to hold.
    pub fn on_watch(&mut self, _now: Instant, deleted: bool) -> Vec<Op> {
        match self.phase {
            Phase::Waiting if deleted => self.watched_went(),
            Phase::Waiting => self.list(Phase::Listing),
            _ => Vec::new(),
        }
    }

    fn watched_went(&mut self) -> Vec<Op> {
        match (self.hold_when_watched_goes, &self.ours, self.czxid) {
            (true, Some(ours), Some(czxid)) => {
                let path = self.child(ours);
                self.finish(Outcome::Held { path, czxid })
            }
            _ => self.list(Phase::Listing),
        }
    }

    /// The session's connection changed.
    pub fn on_state(&mut self, _now: Instant, state: Connection) -> Vec<Op> {
        if self.phase == Phase::Done {
            return Vec::new();
        }
        match state {
            Connection::Expired => {
                self.ours = None;
                self.create_unconfirmed = false;
                self.finish(Outcome::Failed(Failure::SessionExpired))
            }
            Connection::Lost => self.finish(Outcome::Failed(Failure::SessionLost)),
            Connection::Disconnected => Vec::new(),
            Connection::Connected => match self.phase {
                Phase::Recovering | Phase::Reconnecting if !self.sent.is_empty() => Vec::new(),
                Phase::Recovering => self.list(Phase::Recovering),
                Phase::Reconnecting => match self.ours {
                    Some(_) => self.list(Phase::Listing),
                    None => self.create_and_list(),
                },
                _ => Vec::new(),
            },
        }
    }

    /// The deadline passed. While waiting, the attempt ends `TimedOut` (clean up our node);
    /// with a reply still in flight, it ends when that reply comes, unless it holds then
    /// (an uncontended lock is taken even with a zero timeout, as in Curator).
    pub fn on_timeout(&mut self, now: Instant) -> Vec<Op> {
        if !self.past_deadline(now) || self.phase == Phase::Done {
            return Vec::new();
        }
        match self.phase {
            Phase::Waiting | Phase::Reconnecting => self.finish(Outcome::TimedOut),
            _ => {
                self.timed_out = true;
                Vec::new()
            }
        }
    }
}
