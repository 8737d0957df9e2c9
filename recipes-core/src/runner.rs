//! [`Runner`]: runs any [`Machine`], keeps count of what it has in flight and which watches it
//! has set, and checks after every input that the machine is not idle by accident.

use std::time::Instant;

use crate::machine::{Input, Machine};
use crate::op::{Connection, Op, WatchKind};
use crate::queue::Queue;

/// A machine was left with nothing that can move it on: no op in flight, no watch, no timer
/// in the future, no outcome, while connected. Run as is, it would wait forever, or spin on a
/// timer in the past. A driver fails the attempt with this (and cleans up) rather than hang.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("lock machine stuck after {input}: {why}")]
pub struct Stuck {
    /// The input after which it happened.
    pub input: &'static str,
    /// What was wrong.
    pub why: &'static str,
}

/// Wraps a [`Machine`] for a driver or a simulator: feeds inputs, hands out ops, tracks the ops
/// in flight and the watches set, and checks the liveness invariant after every input.
///
/// # Examples
///
/// ```
/// use std::time::Instant;
/// use recipes_core::{AcquireMachine, Exclusive, Input, Op, Reply, Runner};
///
/// let now = Instant::now();
/// let m = AcquireMachine::new("/locks/a", Exclusive::mutex(), "3f0c6a52-8f7e-4b1e-9a53-2d6f0e1c9b7a", Default::default(), None);
/// let mut r = Runner::new(m);
/// r.handle(now, Input::Start).unwrap();
/// assert!(matches!(r.poll_op(), Some(Op::Create { .. })));
/// assert!(matches!(r.poll_op(), Some(Op::Children { .. })));
/// assert_eq!(r.in_flight(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct Runner<M> {
    machine: M,
    /// Ops handed out but not answered, with the watch each asked for.
    in_flight: Queue<Option<(WatchKind, String)>, 4>,
    /// Ops the machine issued that the caller has not taken yet.
    outbox: Queue<Op, 4>,
    /// Watches set and not fired.
    watches: Vec<(WatchKind, String)>,
    connection: Connection,
}

impl<M: Machine> Runner<M> {
    /// Wraps `machine`, which has had no input yet. The session is assumed connected until
    /// told otherwise.
    pub fn new(machine: M) -> Self {
        Self {
            machine,
            in_flight: Queue::new(),
            outbox: Queue::new(),
            watches: Vec::new(),
            connection: Connection::Connected,
        }
    }

    /// The machine.
    pub fn machine(&self) -> &M {
        &self.machine
    }

    /// The machine, to take it apart.
    pub fn into_machine(self) -> M {
        self.machine
    }

    /// Ops sent and not answered yet.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// The watch the oldest op in flight asked for, if any (its reply comes next).
    pub fn next_reply_watch(&self) -> Option<(WatchKind, String)> {
        self.in_flight.front().cloned().flatten()
    }

    /// Watches set and not fired.
    pub fn watches(&self) -> &[(WatchKind, String)] {
        &self.watches
    }

    /// Feeds `input` and checks the machine afterwards. A reply with nothing in flight, or a
    /// watch event for a watch that is not set, is not given to the machine (a stale event).
    pub fn handle(&mut self, now: Instant, input: Input) -> Result<(), Stuck> {
        let name = input_name(&input);
        match &input {
            Input::Reply(reply) => {
                let Some(asked) = self.in_flight.pop_front() else {
                    return Ok(());
                };
                if let Some(watch) = asked {
                    if reply.leaves_watch() {
                        self.watches.push(watch);
                    }
                }
            }
            Input::Watch { kind, path, .. } => {
                let Some(i) = self
                    .watches
                    .iter()
                    .position(|(k, p)| k == kind && p == path)
                else {
                    return Ok(());
                };
                self.watches.swap_remove(i);
            }
            Input::Connection(c) => {
                self.connection = *c;
                if *c == Connection::Expired {
                    self.watches.clear();
                }
            }
            _ => {}
        }
        self.machine.handle(now, input);
        while let Some(op) = self.machine.poll_op() {
            self.in_flight
                .push_back(op.watch_kind().map(|(k, p)| (k, p.to_owned())));
            self.outbox.push_back(op);
        }
        self.check(now, name)
    }

    /// The next op to send.
    pub fn poll_op(&mut self) -> Option<Op> {
        self.outbox.pop_front()
    }

    /// The machine's timer.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.machine.poll_timeout()
    }

    fn check(&self, now: Instant, input: &'static str) -> Result<(), Stuck> {
        if self.machine.outcome().is_some() {
            return Ok(());
        }
        let timer = self.machine.poll_timeout();
        if timer.is_some_and(|t| t <= now) {
            return Err(Stuck {
                input,
                why: "its timer is already due (a driver would spin)",
            });
        }
        let waiting_for_connection = !matches!(self.connection, Connection::Connected);
        if self.in_flight.is_empty()
            && self.watches.is_empty()
            && timer.is_none()
            && !waiting_for_connection
        {
            return Err(Stuck {
                input,
                why: "no op in flight, no watch, no timer, no outcome",
            });
        }
        Ok(())
    }
}

fn input_name(input: &Input) -> &'static str {
    match input {
        Input::Start => "start",
        Input::Reply(_) => "a reply",
        Input::Watch { .. } => "a watch event",
        Input::Connection(_) => "a connection change",
        Input::Timeout => "a timeout",
        Input::Wake => "a wake-up",
        Input::Abandon => "abandon",
    }
}
