//! [`CleanupMachine`]: deletes what an attempt or a hold left behind, retried until done or
//! until the session ends (Curator's guaranteed delete).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::acquire::child_path;
use crate::machine::{Cleanup, Failure, Input, Machine, Outcome};
use crate::op::{Connection, Op, Reply, ZkError};

/// The first wait before trying again after a transient failure; it doubles up to
/// [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(50);

/// The longest wait between two tries.
pub const MAX_BACKOFF: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    Delete,
    Sync,
    Children,
    DeleteFound,
}

/// Runs [`Cleanup`]s, one after the other, to the end:
/// - [`Cleanup::Delete`]: delete the node; `NoNode` counts as done.
/// - [`Cleanup::FindAndDelete`]: `sync` the base (a lagging follower could hide the node),
///   list it, delete every child with the prefix; a missing base counts as done.
///
/// A lost connection waits for the session to come back and tries again; a transient failure
/// (session moved, throttled, timed out on the server, read-only server) tries again after a
/// back-off; the session's expiry ends everything (our ephemeral nodes went with it; the
/// outcome is `Failed(SessionExpired)`, so that a release can tell its caller the lock went
/// with the session rather than by its delete). Any other error (no permission, say) gives
/// that cleanup up and goes on with the next; the outcome is then `Failed` with it. `Held(())`
/// means everything was deleted by us.
///
/// # Examples
///
/// ```
/// use std::time::Instant;
/// use recipes_core::{Cleanup, CleanupMachine, Input, Machine, Op, Outcome, Reply, ZkError};
///
/// let now = Instant::now();
/// let mut m = CleanupMachine::new(vec![Cleanup::Delete("/locks/a/_c_x-lock-0000000001".into())]);
/// m.handle(now, Input::Start);
/// assert!(matches!(m.poll_op(), Some(Op::Delete { .. })));
/// m.handle(now, Input::Reply(Reply::Failed(ZkError::NoNode))); // already gone: done
/// assert_eq!(m.outcome(), Some(&Outcome::Held(())));
/// ```
#[derive(Debug, Clone)]
pub struct CleanupMachine {
    todo: VecDeque<Cleanup>,
    current: Option<Cleanup>,
    sent: VecDeque<Sent>,
    outbox: VecDeque<Op>,
    connection: Connection,
    /// The current cleanup must be tried again (after the back-off or the reconnect).
    again: bool,
    retry_at: Option<Instant>,
    backoff: Duration,
    gave_up: Option<ZkError>,
    outcome: Option<Outcome<()>>,
}

impl CleanupMachine {
    /// A machine that will run `cleanups` in order.
    pub fn new(cleanups: Vec<Cleanup>) -> Self {
        Self {
            todo: cleanups.into(),
            current: None,
            sent: VecDeque::new(),
            outbox: VecDeque::new(),
            connection: Connection::Connected,
            again: false,
            retry_at: None,
            backoff: FIRST_BACKOFF,
            gave_up: None,
            outcome: None,
        }
    }

    fn send(&mut self, kind: Sent, op: Op) {
        self.sent.push_back(kind);
        self.outbox.push_back(op);
    }

    /// Starts the current cleanup (again), or the next, or ends.
    fn step(&mut self, now: Instant) {
        if self.outcome.is_some() || !self.sent.is_empty() {
            return;
        }
        if self.again {
            if self.connection != Connection::Connected {
                return; // wait for the connection
            }
            if self.retry_at.is_some_and(|t| now < t) {
                return; // wait for the back-off
            }
            self.again = false;
            self.retry_at = None;
        } else {
            self.current = self.todo.pop_front();
            self.backoff = FIRST_BACKOFF;
        }
        match self.current.clone() {
            None => {
                self.outcome = Some(match self.gave_up {
                    None => Outcome::Held(()),
                    Some(e) => Outcome::Failed(Failure::Zk(e)),
                });
            }
            Some(Cleanup::Delete(path)) => self.send(Sent::Delete, Op::Delete { path }),
            Some(Cleanup::FindAndDelete { base, .. }) => {
                self.send(Sent::Sync, Op::Sync { path: base.clone() });
                self.send(
                    Sent::Children,
                    Op::Children {
                        path: base,
                        watch: false,
                    },
                );
            }
        }
    }

    /// The current cleanup failed with `e`: try it again later, or give it up.
    fn failed(&mut self, now: Instant, e: ZkError) {
        match e {
            ZkError::SessionExpired => self.session_ended(),
            ZkError::ConnectionLoss | ZkError::NotSent => {
                self.again = true;
                if self.connection == Connection::Connected {
                    // The session has not reported the loss yet: do not spin on it.
                    self.retry_later(now);
                }
            }
            ZkError::Transient => {
                self.again = true;
                self.retry_later(now);
            }
            e => {
                self.gave_up = Some(e);
                self.again = false;
            }
        }
    }

    fn retry_later(&mut self, now: Instant) {
        self.retry_at = Some(now + self.backoff);
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }

    fn session_ended(&mut self) {
        self.todo.clear();
        self.current = None;
        self.again = false;
        self.retry_at = None;
        self.sent.clear();
        self.outbox.clear();
        if self.outcome.is_none() {
            self.outcome = Some(Outcome::Failed(Failure::SessionExpired));
        }
    }

    fn on_reply(&mut self, now: Instant, reply: Reply) {
        let Some(kind) = self.sent.pop_front() else {
            return;
        };
        match (kind, reply) {
            (Sent::Delete | Sent::DeleteFound, Reply::Done | Reply::Failed(ZkError::NoNode)) => {}
            (Sent::Sync, Reply::Done) => {}
            // The listing that follows fails the same way, or tells.
            (Sent::Sync, Reply::Failed(_)) => {}
            (Sent::Children, Reply::Children(children)) => {
                if let Some(Cleanup::FindAndDelete { base, prefix }) = &self.current {
                    let found: Vec<String> = children
                        .iter()
                        .filter(|c| c.starts_with(prefix.as_str()))
                        .map(|c| child_path(base, c))
                        .collect();
                    for path in found {
                        self.send(Sent::DeleteFound, Op::Delete { path });
                    }
                }
            }
            (Sent::Children, Reply::Failed(ZkError::NoNode)) => {} // no base, no node
            (_, Reply::Failed(e)) => {
                if !self.again {
                    self.failed(now, e);
                }
            }
            (_, _) => self.failed(now, ZkError::Other),
        }
        self.step(now);
    }
}

impl Machine for CleanupMachine {
    type Output = ();

    fn handle(&mut self, now: Instant, input: Input) {
        if self.outcome.is_some() {
            return;
        }
        match input {
            Input::Start => self.step(now),
            Input::Reply(reply) => self.on_reply(now, reply),
            Input::Connection(c) => {
                self.connection = c;
                match c {
                    Connection::Expired => self.session_ended(),
                    Connection::Connected => {
                        self.retry_at = None;
                        self.step(now);
                    }
                    _ => self.retry_at = None,
                }
            }
            Input::Timeout => self.step(now),
            // Nobody waits for a cleanup to give up on it: it runs to the end.
            Input::Watch { .. } | Input::Wake | Input::Abandon => {}
        }
    }

    fn poll_op(&mut self) -> Option<Op> {
        self.outbox.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.outcome.is_some() {
            return None;
        }
        self.retry_at
    }

    fn outcome(&self) -> Option<&Outcome<()>> {
        self.outcome.as_ref()
    }

    fn cleanups(&self) -> Vec<Cleanup> {
        if self.outcome.is_some() {
            return Vec::new();
        }
        self.current
            .iter()
            .chain(self.todo.iter())
            .cloned()
            .collect()
    }
}
